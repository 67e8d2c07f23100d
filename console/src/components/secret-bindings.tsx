import type { Problem } from '../api/client.ts';
import { FieldMessage, fieldError } from './problem.tsx';

export interface Binding {
  var: string;
  secret: string;
}

/** The two names of a binding, in the order and with the labels the form shows them. */
const PARTS = [
  ['var', 'Variable'],
  ['secret', 'Secret name'],
] as const satisfies readonly (readonly [keyof Binding, string])[];

/** "Use a secret": variable name ← secret name. Only names travel; the value is resolved at launch. */
export function SecretBindings({
  bindings,
  onChange,
  problem,
}: {
  bindings: readonly Binding[];
  onChange: (next: Binding[]) => void;
  problem: Problem | undefined;
}) {
  const set = (i: number, patch: Partial<Binding>) =>
    onChange(bindings.map((b, j) => (j === i ? { ...b, ...patch } : b)));
  return (
    <fieldset class="bindings">
      <legend>Secret bindings</legend>
      {bindings.length === 0 && (
        <p class="hint">None. A binding puts a stored secret in a variable at launch.</p>
      )}
      {bindings.map((b, i) => (
        <div class="binding-row" key={i}>
          {PARTS.map(([part, label]) => (
            <BindingInput
              key={part}
              label={label}
              errorId={`secret-${i}-${part}-error`}
              value={b[part]}
              onText={(text) => set(i, { [part]: text })}
              error={fieldError(problem, `body.secrets.${i}.${part}`)}
            />
          ))}
          <button
            type="button"
            class="secondary"
            aria-label={`Remove binding ${i + 1}`}
            onClick={() => onChange(bindings.filter((_, j) => j !== i))}
          >
            Remove
          </button>
        </div>
      ))}
      <button
        type="button"
        class="secondary"
        onClick={() => onChange([...bindings, { var: '', secret: '' }])}
      >
        Add secret binding
      </button>
    </fieldset>
  );
}

/** One name of a binding, its label wrapping it, with the API's message for it (as `errorId`). */
function BindingInput({
  label,
  errorId,
  value,
  onText,
  error,
}: {
  label: string;
  errorId: string;
  value: string;
  onText: (text: string) => void;
  error: string | undefined;
}) {
  return (
    <label>
      {label}
      <input
        value={value}
        spellcheck={false}
        onInput={(e) => onText(e.currentTarget.value)}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? errorId : undefined}
      />
      <FieldMessage id={errorId} message={error} />
    </label>
  );
}

import type { Problem } from '../api/client.ts';
import { FieldMessage, fieldError } from './problem.tsx';

export interface Binding {
  var: string;
  secret: string;
}

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
      {bindings.map((b, i) => {
        const varError = fieldError(problem, `body.secrets.${i}.var`);
        const secretError = fieldError(problem, `body.secrets.${i}.secret`);
        return (
          <div class="binding-row" key={i}>
            <label>
              Variable
              <input
                value={b.var}
                spellcheck={false}
                onInput={(e) => set(i, { var: e.currentTarget.value })}
                aria-invalid={varError ? 'true' : undefined}
                aria-describedby={varError ? `secret-${i}-var-error` : undefined}
              />
              <FieldMessage id={`secret-${i}-var-error`} message={varError} />
            </label>
            <label>
              Secret name
              <input
                value={b.secret}
                spellcheck={false}
                onInput={(e) => set(i, { secret: e.currentTarget.value })}
                aria-invalid={secretError ? 'true' : undefined}
                aria-describedby={secretError ? `secret-${i}-secret-error` : undefined}
              />
              <FieldMessage id={`secret-${i}-secret-error`} message={secretError} />
            </label>
            <button
              type="button"
              class="secondary"
              aria-label={`Remove binding ${i + 1}`}
              onClick={() => onChange(bindings.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </div>
        );
      })}
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

import type { Problem } from '../api/client.ts';

/** A problem+json answer as the API gave it: title, detail, every field error and refused target. */
export function ProblemView({ problem, heading }: { problem: Problem; heading?: string | undefined }) {
  return (
    <div class="problem" role="alert">
      <strong>{heading ?? problem.title}</strong>
      {heading !== undefined && <div>{problem.title}</div>}
      {problem.detail !== undefined && <p class="problem-detail">{problem.detail}</p>}
      {problem.targets !== undefined && problem.targets.length > 0 && (
        <NamedList label="Refused targets" items={problem.targets.map((t) => [t.targetId, t.reason])} />
      )}
      {problem.errors !== undefined && problem.errors.length > 0 && problem.targets === undefined && (
        <NamedList label="Field errors" items={problem.errors.map((e) => [e.path, e.message])} />
      )}
    </div>
  );
}

/** What the API said about each named thing (a target, a request field), one per line: `name`: text. */
export function NamedList({
  label,
  items,
}: {
  label?: string;
  items: readonly (readonly [string, string])[];
}) {
  return (
    <ul aria-label={label}>
      {items.map(([name, text]) => (
        <li key={name}>
          <code>{name}</code>: {text}
        </li>
      ))}
    </ul>
  );
}

/** The message the API gave for one request field (`body.timeoutSeconds`), shown beside that field. */
export function fieldError(problem: Problem | undefined, path: string): string | undefined {
  const found = problem?.errors?.filter((e) => e.path === path || e.path.startsWith(`${path}.`));
  return found && found.length > 0 ? found.map((e) => e.message).join('; ') : undefined;
}

export function FieldMessage({ id, message }: { id: string; message: string | undefined }) {
  return message === undefined ? null : (
    <span class="field-error" id={id}>
      {message}
    </span>
  );
}

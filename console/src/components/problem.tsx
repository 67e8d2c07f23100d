import type { Problem } from '../api/client.ts';

/** A problem+json answer as the API gave it: title, detail, every field error and refused target. */
export function ProblemView({ problem, heading }: { problem: Problem; heading?: string | undefined }) {
  return (
    <div class="problem" role="alert">
      <strong>{heading ?? problem.title}</strong>
      {heading !== undefined && <div>{problem.title}</div>}
      {problem.detail !== undefined && <p class="problem-detail">{problem.detail}</p>}
      {problem.targets !== undefined && problem.targets.length > 0 && (
        <ul aria-label="Refused targets">
          {problem.targets.map((t) => (
            <li key={t.targetId}>
              <code>{t.targetId}</code>: {t.reason}
            </li>
          ))}
        </ul>
      )}
      {problem.errors !== undefined && problem.errors.length > 0 && problem.targets === undefined && (
        <ul aria-label="Field errors">
          {problem.errors.map((e) => (
            <li key={e.path}>
              <code>{e.path}</code>: {e.message}
            </li>
          ))}
        </ul>
      )}
    </div>
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

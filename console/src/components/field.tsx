import type { ComponentChildren } from 'preact';
import { FieldMessage } from './problem.tsx';

/**
 * One field of a form: its label (for the control `id`), the control and any hint as `children`, and
 * the API's message for it (`error`), shown after them as `<id>-error`. The control ties itself to the
 * message (`aria-describedby`) where it wants to.
 *
 * @example
 * <Field id="t-name" label="Name" error={err('body.name')}><input id="t-name" … /></Field>
 */
export function Field({
  id,
  label,
  error,
  children,
}: {
  id: string;
  label: ComponentChildren;
  error?: string | undefined;
  children: ComponentChildren;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      <FieldMessage id={`${id}-error`} message={error} />
    </div>
  );
}

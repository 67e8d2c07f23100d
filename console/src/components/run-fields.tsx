import { Field } from './field.tsx';

/**
 * The optional SSH user and timeout of a run, as the new-run form and the
 * inventory's batch panel ask for them. `error` is the API's message for the
 * field (new-run form), shown beside it and tied to the input.
 */
function OptionalField({
  id,
  label,
  value,
  onText,
  error,
  numeric = false,
}: {
  id: string;
  label: string;
  value: string;
  onText: (text: string) => void;
  error?: string | undefined;
  numeric?: boolean;
}) {
  return (
    <Field id={id} label={`${label} (optional)`} error={error}>
      <input
        id={id}
        inputMode={numeric ? 'numeric' : undefined}
        value={value}
        onInput={(e) => onText(e.currentTarget.value)}
        aria-invalid={error ? 'true' : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
      />
    </Field>
  );
}

export const SshUserField = (props: {
  id: string;
  value: string;
  onText: (text: string) => void;
  error?: string | undefined;
}) => <OptionalField {...props} label="SSH user" />;

export const TimeoutField = (props: {
  id: string;
  value: string;
  onText: (text: string) => void;
  error?: string | undefined;
}) => <OptionalField {...props} label="Timeout in seconds" numeric />;

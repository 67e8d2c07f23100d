import { useEffect, useState } from 'preact/hooks';
import type { Asset } from '../api/client.ts';
import { takesExtraVars } from './badges.tsx';

export type ExtraVarsCheck = { ok: true; value: Record<string, unknown> } | { ok: false; message: string };

/**
 * Extra vars as YAML or JSON (JSON is YAML). The parser is loaded on first
 * use, so pages that never edit vars do not pay for it in the first load.
 */
export async function checkExtraVars(text: string): Promise<ExtraVarsCheck> {
  if (text.trim() === '') return { ok: true, value: {} };
  const { parse } = await import('yaml');
  let value: unknown;
  try {
    value = parse(text, { prettyErrors: true });
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      ok: false,
      message: 'Extra vars must be a mapping of names to values (for example `seconds: 5`).',
    };
  }
  const bad = Object.keys(value).filter((k) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
  if (bad.length > 0) return { ok: false, message: `Not a valid variable name: ${bad.join(', ')}` };
  return { ok: true, value: value as Record<string, unknown> };
}

export function ExtraVarsField({
  id,
  text,
  onText,
  assetType,
  serverError,
}: {
  id: string;
  text: string;
  onText: (text: string) => void;
  assetType: Asset['type'] | undefined;
  serverError?: string | undefined;
}) {
  const [local, setLocal] = useState<string>();
  useEffect(() => {
    let live = true;
    const timer = setTimeout(async () => {
      const result = await checkExtraVars(text);
      if (live) setLocal(result.ok ? undefined : result.message);
    }, 250);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [text]);
  const message = local ?? serverError;
  const ignored = !takesExtraVars(assetType);
  return (
    <div class="field">
      <label for={id}>Extra vars (YAML or JSON)</label>
      <textarea
        id={id}
        rows={4}
        spellcheck={false}
        value={text}
        onInput={(e) => onText(e.currentTarget.value)}
        aria-invalid={message ? 'true' : undefined}
        aria-describedby={`${id}-notice${message ? ` ${id}-error` : ''}`}
      />
      <span id={`${id}-notice`} class={ignored ? 'notice warn' : 'hint'}>
        Extra vars are forwarded only to playbooks: for scripts and packages they are accepted but ignored.
        {ignored && ' The selected asset is not a playbook.'}
      </span>
      {message && (
        <pre class="field-error" id={`${id}-error`}>
          {message}
        </pre>
      )}
    </div>
  );
}

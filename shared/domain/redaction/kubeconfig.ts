/**
 * Credential values inside a kubeconfig (YAML or JSON): bearer tokens,
 * auth-provider tokens, basic-auth passwords, client keys and certificates,
 * with `client-key-data` also decoded (the PEM key it holds). Redacting the
 * kubeconfig text covers it printed whole or line by line; these cover a
 * credential printed on its own (`Authorization: Bearer …`).
 *
 * @example
 * kubeconfigSecrets('users: [{name: u, user: {token: tok-12345}}]'); // ['tok-12345']
 */
export function kubeconfigSecrets(kubeconfig: string): string[] {
  const found = new Set<string>();
  const field =
    /["']?\b(token|id-token|refresh-token|access-token|password|client-key-data|client-certificate-data)["']?[ \t]*:[ \t]*("(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*'|[^\s,{}[\]#"']+)/g;
  for (const [, name, raw] of kubeconfig.matchAll(field)) {
    if (raw === undefined) continue;
    const value = unquote(raw);
    if (value === '') continue;
    found.add(value);
    if (name === 'client-key-data') {
      const decoded = decodeBase64(value);
      if (decoded !== undefined) found.add(decoded);
    }
  }
  return [...found];
}

function unquote(raw: string): string {
  if (raw.startsWith('"')) {
    try {
      return JSON.parse(raw) as string;
    } catch {
      return raw.slice(1, -1);
    }
  }
  if (raw.startsWith("'")) return raw.slice(1, -1).replaceAll("''", "'");
  return raw;
}

function decodeBase64(text: string): string | undefined {
  try {
    const binary = atob(text);
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

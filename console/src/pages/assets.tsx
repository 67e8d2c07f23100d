import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import { AssetBadge } from '../components/badges.tsx';
import { ListTable } from '../components/list-table.tsx';
import { FieldMessage, fieldError, ProblemView } from '../components/problem.tsx';
import { bytes } from '../format.ts';
import { useAction, useLoad } from '../hooks.ts';
import { href } from '../router.ts';

/** The API's limit on decoded content (docs/api.md: a synchronous Lambda takes at most 6 MB). */
const MAX_ASSET_BYTES = 4 * 1024 * 1024;

function toBase64(buffer: ArrayBuffer): string {
  const view = new Uint8Array(buffer);
  let binary = '';
  // In slices: String.fromCharCode with one argument per byte overflows the stack on megabytes.
  for (let i = 0; i < view.length; i += 0x8000)
    binary += String.fromCharCode(...view.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function AssetsPage() {
  const list = useLoad(() => api.GET('/assets'));
  const [file, setFile] = useState<File>();
  const [path, setPath] = useState('');
  const [overwrite, setOverwrite] = useState(false);
  const { busy, problem, setProblem, request } = useAction();
  const [done, setDone] = useState<string>();

  async function upload(e: Event) {
    e.preventDefault();
    setProblem(undefined);
    setDone(undefined);
    if (!file) return setProblem({ type: 'about:blank', title: 'Choose a file', status: 0 });
    if (file.size > MAX_ASSET_BYTES) {
      return setProblem({
        type: 'about:blank',
        title: 'The file is too large',
        status: 0,
        detail: `At most ${bytes(MAX_ASSET_BYTES)} through the API; copy larger packages to the bucket with the cloud's tools.`,
      });
    }
    await request(
      async () => {
        const contentBase64 = toBase64(await file.arrayBuffer());
        return api.POST('/assets', {
          body: { path: path.trim(), contentBase64, ...(overwrite ? { overwrite: true } : {}) },
        });
      },
      () => {
        setDone(path.trim());
        list.reload();
      },
    );
  }

  return (
    <section aria-labelledby="assets-h">
      <h1 id="assets-h">Assets</h1>
      <form class="card" onSubmit={upload} aria-labelledby="upload-h">
        <h2 id="upload-h">Upload</h2>
        <p class="hint">
          Playbooks (.yml, .yaml), scripts (.sh, .ps1) and packages (.rpm, .deb) go to the active storage
          backend.
        </p>
        <div class="row">
          <div class="field">
            <label for="asset-file">File</label>
            <input
              id="asset-file"
              type="file"
              accept=".yml,.yaml,.sh,.ps1,.rpm,.deb"
              onChange={(e) => {
                const chosen = e.currentTarget.files?.[0];
                setFile(chosen);
                if (chosen && path === '') setPath(chosen.name);
              }}
            />
          </div>
          <div class="field">
            <label for="asset-path">Path in storage</label>
            <input
              id="asset-path"
              value={path}
              spellcheck={false}
              required
              onInput={(e) => setPath(e.currentTarget.value)}
              aria-invalid={fieldError(problem, 'body.path') ? 'true' : undefined}
              aria-describedby="asset-path-help"
            />
            <span class="hint" id="asset-path-help">
              Relative, with / between folders, for example <code>team/patch.sh</code>.
            </span>
            <FieldMessage id="asset-path-error" message={fieldError(problem, 'body.path')} />
          </div>
        </div>
        <label class="check">
          <input
            type="checkbox"
            checked={overwrite}
            onChange={(e) => setOverwrite(e.currentTarget.checked)}
          />
          Replace an asset already at this path
        </label>
        {problem && <ProblemView problem={problem} />}
        {done && (
          <p class="notice" role="status">
            Uploaded <code>{done}</code>. <a href={href('/new', { asset: done })}>Run it</a>
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Uploading…' : 'Upload'}
        </button>
      </form>
      {list.problem && <ProblemView problem={list.problem} heading="Assets could not be listed" />}
      <ListTable label="Assets table" columns={['Type', 'Path', 'Size', { hidden: 'Actions' }]}>
        {(list.data?.assets ?? []).map((a) => (
          <tr key={a.path}>
            <td>
              <AssetBadge type={a.type} />
            </td>
            <td class="wrap">
              <code>{a.path}</code>
            </td>
            <td>{bytes(a.size)}</td>
            <td>
              <a href={href('/new', { asset: a.path })} aria-label={`Run ${a.path}`}>
                Run
              </a>
            </td>
          </tr>
        ))}
      </ListTable>
    </section>
  );
}

import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { loadRelayConfig } from '../../runners/relay/config.ts';
import { SHIM_BUNDLE } from '../../runners/shim/bundle.ts';
import { SETTING_KEYS } from '../../shared/config/settings.ts';
import {
  bundleArgs,
  type Dockerfile,
  dockerfileOf,
  execForm,
  finalStage,
  imageStages,
  instructionsOf,
  keyValues,
  REPO,
  RUNNER_DOCKERFILE,
  RUNNER_IMAGES,
  readInstructions,
  runnerDockerfile,
  substitute,
} from './dockerfile.ts';

/**
 * Static checks of the images' Dockerfiles: entrypoint, non-root user, no
 * secret in ARG or ENV, every base image pinned to an exact version (through
 * the defaults of the build arguments that name them), OCI labels, and a
 * build context that carries only what the build copies.
 * test/runners/images.test.ts builds and runs the runner images on podman.
 */

const execFileAsync = promisify(execFile);

const IMAGES = [
  ...RUNNER_IMAGES.map((i) => ({
    file: `${RUNNER_DOCKERFILE} RUNNER=${i.runner}`,
    dockerfile: () => runnerDockerfile(i.runner),
    entrypoint: ['node', '/opt/remote-worker/shim.mjs'],
  })),
  {
    file: 'runners/relay/Dockerfile',
    dockerfile: () => dockerfileOf('runners/relay'),
    entrypoint: ['node', '/opt/remote-worker/relay.mjs'],
  },
];

const SECRET_NAME =
  /PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|CREDENTIAL|ACCESS_?KEY|SESSION_?KEY|AUTH/i;
const SECRET_VALUE = /-----BEGIN|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{20,}|xox[abp]-|eyJ[A-Za-z0-9_-]{10,}\./;
const REQUIRED_LABELS = [
  'org.opencontainers.image.title',
  'org.opencontainers.image.description',
  'org.opencontainers.image.version',
  'org.opencontainers.image.revision',
  'org.opencontainers.image.created',
  'org.opencontainers.image.source',
  'org.opencontainers.image.base.name',
];

/** Why a FROM reference is not pinned to an exact version, or undefined when it is. */
function unpinnedReason(image: string, earlierStages: ReadonlySet<string>): string | undefined {
  if (earlierStages.has(image)) return undefined;
  if (image.includes('$')) return 'uses a variable without a default';
  const [ref, digest] = image.split('@');
  if (digest !== undefined && !/^sha256:[0-9a-f]{64}$/.test(digest)) return 'has a malformed digest';
  const slash = (ref ?? '').lastIndexOf('/');
  const colon = (ref ?? '').indexOf(':', slash + 1);
  if (colon < 0) return digest === undefined ? 'has no tag (that means latest)' : undefined;
  const tag = (ref ?? '').slice(colon + 1);
  if (/latest/i.test(tag)) return `uses the tag ${tag}`;
  // An exact version: major.minor.patch, optionally with a variant suffix (22.23.5-bookworm-slim).
  if (!/^v?\d+\.\d+\.\d+([-+._][A-Za-z0-9._-]+)?$/.test(tag)) return `uses the floating tag ${tag}`;
  return undefined;
}

function allArgsAndEnv(dockerfile: Dockerfile) {
  return [
    ...[...dockerfile.globalArgs].map(([key, value]) => ({ keyword: 'ARG', key, value })),
    ...dockerfile.stages.flatMap((s) =>
      s.instructions
        .filter((i) => i.keyword === 'ARG' || i.keyword === 'ENV')
        .flatMap((i) => keyValues(i).map((kv) => ({ keyword: i.keyword, ...kv }))),
    ),
  ];
}

describe('unpinnedReason', () => {
  it('accepts exact versions, digests and earlier stages, and names what is wrong otherwise', () => {
    const stages = new Set(['shim']);

    expect(unpinnedReason('node:22.23.5-bookworm-slim', stages)).toBeUndefined();
    expect(unpinnedReason('willhallonline/ansible:2.18.6-debian-bookworm', stages)).toBeUndefined();
    expect(unpinnedReason(`dtzar/helm-kubectl:3.19.1@sha256:${'a'.repeat(64)}`, stages)).toBeUndefined();
    expect(unpinnedReason('shim', stages)).toBeUndefined();
    expect(unpinnedReason('registry.local:5000/x:1.2.3', stages)).toBeUndefined();
    expect(unpinnedReason('node', stages)).toBe('has no tag (that means latest)');
    expect(unpinnedReason('node:latest', stages)).toBe('uses the tag latest');
    expect(unpinnedReason('node:22-slim', stages)).toBe('uses the floating tag 22-slim');
    expect(unpinnedReason('debian:bookworm', stages)).toBe('uses the floating tag bookworm');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a Dockerfile variable, literally
    expect(unpinnedReason('node:${NODE_VERSION}-slim', stages)).toBe('uses a variable without a default');
    expect(unpinnedReason('registry.local:5000/x', stages)).toBe('has no tag (that means latest)');
  });
});

describe.each(IMAGES)('$file', ({ dockerfile: parse, entrypoint }) => {
  const dockerfile = parse();
  const image = finalStage(dockerfile);

  it('has the expected ENTRYPOINT in exec form and no default arguments', () => {
    const entry = instructionsOf(image, 'ENTRYPOINT');
    const cmd = execForm(instructionsOf(image, 'CMD').at(-1));

    expect(entry).toHaveLength(1);
    expect(execForm(entry[0])).toEqual(entrypoint);
    expect(cmd ?? []).toEqual([]);
  });

  it('runs as a numeric non-root user, set after the last root-only step', () => {
    const users = instructionsOf(image, 'USER');
    const last = users.at(-1);
    const lastIndex = last === undefined ? -1 : image.instructions.indexOf(last);
    const after = image.instructions.slice(lastIndex + 1).map((i) => i.keyword);

    expect(last?.args).toMatch(/^\d+(:\d+)?$/);
    expect(Number(last?.args.split(':')[0])).toBeGreaterThan(0);
    expect(Number(last?.args.split(':')[1] ?? 1)).toBeGreaterThan(0);
    expect(after).not.toContain('RUN');
  });

  it('puts no secret in an ARG or ENV', () => {
    const all = allArgsAndEnv(dockerfile);

    expect(all.length).toBeGreaterThan(0);
    for (const { keyword, key, value } of all) {
      expect(isCredential(key), `${keyword} ${key}`).toBe(false);
      expect(value ?? '', `${keyword} ${key}`).not.toMatch(SECRET_VALUE);
    }
  });

  it('pins every FROM to an exact version', () => {
    const seen = new Set<string>();
    const problems: string[] = [];
    for (const stage of dockerfile.stages) {
      const reason = unpinnedReason(stage.image, seen);
      if (reason !== undefined) problems.push(`FROM ${stage.image} ${reason}`);
      if (stage.name !== undefined) seen.add(stage.name);
    }

    expect(dockerfile.stages.length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('carries the OCI labels, base.name naming the real base image', () => {
    // The image's stages, its first one last: a later LABEL overrides an earlier one.
    const stages = imageStages(dockerfile);
    const labels = new Map(
      stages
        .toReversed()
        .flatMap((stage) => instructionsOf(stage, 'LABEL'))
        .flatMap(keyValues)
        .map((kv) => [kv.key, kv.value]),
    );
    const base = stages.at(-1)?.image ?? '';

    for (const label of REQUIRED_LABELS) expect(labels.get(label), label).toBeTruthy();
    // A base chosen by build argument is named by that argument, so a local stand-in is labelled as what it is.
    expect(substitute(labels.get('org.opencontainers.image.base.name') ?? '', dockerfile.globalArgs)).toMatch(
      new RegExp(`${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
    );
  });
});

describe.each(RUNNER_IMAGES)('the $runner build context', ({ runner }) => {
  const dockerfile = runnerDockerfile(runner);

  it('sends a build context holding only what the build copies', () => {
    const rules = readFileSync(join(REPO, `${RUNNER_DOCKERFILE}.dockerignore`), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const copied = dockerfile.stages
      .flatMap((s) => instructionsOf(s, 'COPY'))
      .filter((c) => !c.args.startsWith('--from='))
      .flatMap((c) =>
        c.args
          .split(/\s+/)
          .filter((w) => !w.startsWith('--'))
          .slice(0, -1),
      );

    expect(rules[0]).toBe('*');
    expect(copied.length).toBeGreaterThan(0);
    for (const source of copied) {
      expect(rules, source).toContain(`!${source}`);
      // The shim bundle is built on the host (npm run build:shim) before the image, not committed.
      if (source !== SHIM_BUNDLE) expect(existsSync(join(REPO, source)), source).toBe(true);
    }
    expect(copied).toContain(SHIM_BUNDLE);
  });

  it('names its public inputs by build arguments with pinned defaults, redeclared where the labels read them', () => {
    // The FROM lines as written, before the parser substituted the defaults.
    const fromArgs = readInstructions(readFileSync(join(REPO, RUNNER_DOCKERFILE), 'utf8'))
      .filter((ins) => ins.keyword === 'FROM')
      .flatMap((ins) => [...ins.args.matchAll(/\$\{([A-Z_]+)\}/g)].map((m) => m[1] ?? ''));
    const finalArgs = instructionsOf(finalStage(dockerfile), 'ARG').flatMap(keyValues);

    expect(fromArgs).toContain('BASE_IMAGE');
    // RUNNER names the stage the image is made from, and the title label reads it.
    expect(fromArgs).toContain('RUNNER');
    expect(dockerfile.stages.map((s) => s.name)).toContain(runner);
    expect(finalArgs).toContainEqual({ key: 'RUNNER', value: undefined });
    expect(dockerfile.globalArgs.get('BASE_IMAGE')).toBe('node:22.23.5-bookworm-slim');
    for (const name of fromArgs) expect(dockerfile.globalArgs.get(name), name).toBeTruthy();
    expect(finalArgs).toContainEqual({ key: 'BASE_IMAGE', value: undefined });
    if (fromArgs.includes('TOOLS_IMAGE')) {
      // The default is the stage that downloads and checksums kubectl and helm.
      expect(dockerfile.globalArgs.get('TOOLS_IMAGE')).toBe('tools-download');
      expect(dockerfile.stages.map((s) => s.name)).toContain('tools-download');
    }
  });
});

describe('runner image READMEs', () => {
  it.each(RUNNER_IMAGES)(
    '$dir/README.md names its setting and shows the multi-arch build and the mirrors',
    ({ runner, dir, setting }) => {
      const readme = readFileSync(join(REPO, dir, 'README.md'), 'utf8');

      expect(SETTING_KEYS).toContain(setting);
      expect(readme).toContain(`\`${setting}\``);
      expect(readme).toContain('docker buildx build');
      expect(readme).toContain('--platform linux/amd64,linux/arm64');
      expect(readme).toContain(`-f ${RUNNER_DOCKERFILE}`);
      expect(readme).toContain(`--build-arg RUNNER=${runner}`);
      for (const registry of ['ecr', 'az acr', 'docker.pkg.dev']) expect(readme).toContain(registry);
      expect(readme).toMatch(/imagetools inspect/);
    },
  );
});

describe('readInstructions', () => {
  it('joins continued lines, drops comments inside them, and keeps the first line number', () => {
    const parsed = readInstructions(
      ['# syntax=docker/dockerfile:1', 'FROM a:1.2.3', 'RUN one \\', '  # note', '  two', ''].join('\n'),
    );

    expect(parsed).toEqual([
      { keyword: 'FROM', args: 'a:1.2.3', line: 2 },
      { keyword: 'RUN', args: 'one two', line: 3 },
    ]);
  });
});

// ---------------------------------------------------------------- relay packaging

/**
 * Variables the relay's container may carry besides its own: the AWS SDK reads
 * these itself (runners/relay/config.ts says so), the agent never does.
 */
const AWS_SDK_ENV = new Set([
  'AWS_REGION',
  'AWS_PROFILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_ENDPOINT_URL',
]);

/**
 * Which of `names` the relay's own configuration knows, and which it requires,
 * asked of runners/relay/config.ts itself: `loadRelayConfig({})` names every
 * required variable, and a blank value is refused for every variable its
 * schema declares (text, numbers, enums and URLs all reject "   ") while an
 * unknown one is ignored — so the answer is the schema's, whatever it grows to.
 */
function relayContract(names: readonly string[]): { known: Set<string>; required: Set<string> } {
  const problemsOf = (env: Record<string, string>): { path: string; message: string }[] => {
    try {
      loadRelayConfig(env);
      return [];
    } catch (error) {
      return (error as { problems?: { path: string; message: string }[] }).problems ?? [];
    }
  };
  const required = new Set(
    problemsOf({})
      .filter((p) => p.message === 'is required')
      .map((p) => p.path),
  );
  const known = new Set(
    problemsOf(Object.fromEntries(names.map((n) => [n, '   '])))
      .map((p) => p.path)
      .filter((path) => names.includes(path)),
  );
  return { known, required };
}

/** A variable that holds a credential itself (not the path or name of one). */
const isCredential = (name: string): boolean =>
  SECRET_NAME.test(name) && !/_(FILE|PREFIX|PATH|NAME|DIR|REF)$/.test(name);

const RELAY = join(REPO, 'runners/relay');

function checkNames(where: string, names: readonly string[]): void {
  const { known, required } = relayContract(names);
  const unknown = names.filter((n) => !known.has(n) && !AWS_SDK_ENV.has(n));
  const missing = [...required].filter((n) => !names.includes(n));

  expect(required.size, 'the contract has required variables').toBeGreaterThan(0);
  expect(unknown, `${where}: variables config.ts does not know`).toEqual([]);
  expect(missing, `${where}: required variables not set`).toEqual([]);
}

describe('the relay environment contract', () => {
  const table = readFileSync(join(REPO, 'docs/relay.md'), 'utf8');
  const documented = [...table.matchAll(/^\| `([A-Z0-9_]+)`\s*\| (yes|no)\s*\|/gm)].map((m) => ({
    name: m[1] ?? '',
    required: m[2] === 'yes',
  }));

  it('is read from runners/relay/config.ts, and docs/relay.md documents it', () => {
    const { known, required } = relayContract(documented.map((d) => d.name));

    expect(required).toContain('RELAY_ID');
    expect(documented.length).toBeGreaterThan(required.size);
    for (const d of documented) {
      expect(known, d.name).toContain(d.name);
      expect(required.has(d.name), `${d.name} required`).toBe(d.required);
    }
    for (const name of required) expect(documented.map((d) => d.name)).toContain(name);
  });

  it('tells an unknown variable from a known one', () => {
    const { known } = relayContract(['RELAY_ID', 'RELAY_CONCURRENCY', 'RELAY_NO_SUCH_SETTING']);

    expect([...known].sort()).toEqual(['RELAY_CONCURRENCY', 'RELAY_ID']);
  });
});

describe('runners/relay/docker-compose.yml', () => {
  const compose = parseYaml(readFileSync(join(RELAY, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, Record<string, any>>;
    volumes?: Record<string, unknown>;
  };
  const relay = compose.services.relay ?? {};
  const environment: Record<string, string> = Array.isArray(relay.environment)
    ? Object.fromEntries(
        (relay.environment as string[]).map((e) => [e.split('=')[0] ?? '', e.split('=').slice(1).join('=')]),
      )
    : (relay.environment ?? {});

  it('sets exactly the variables of the relay config schema (and the AWS SDK’s), every required one', () => {
    checkNames('docker-compose.yml', Object.keys(environment));
  });

  it('takes every credential and identity from the environment, never a literal', () => {
    for (const [name, value] of Object.entries(environment)) {
      if (!isCredential(name)) continue;
      expect(String(value), name).toMatch(new RegExp(`^\\$\\{${name}(:?[-?][^}]*)?\\}$`));
    }
    for (const name of ['RELAY_ID', 'RELAY_QUEUE_URL', 'RUNS_TABLE', 'AWS_REGION']) {
      expect(environment[name], name).toMatch(new RegExp(`^\\$\\{${name}:\\?`));
    }
    expect(String(relay.image)).toMatch(/^\$\{RELAY_IMAGE:\?/);
  });

  it('mounts the Docker socket, reaches it through its group, and keeps the image user', () => {
    expect(relay.volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
    expect(relay.group_add?.[0]).toMatch(/^\$\{DOCKER_GID:\?/);
    expect(relay.user).toBeUndefined();
    expect(relay.privileged).toBeUndefined();
  });

  it('mounts the asset root at the same path, since the host engine resolves the runner’s mount', () => {
    const assetMount = (relay.volumes as string[]).find((v) => v.includes('RELAY_ASSET_ROOT'));
    const [source, target] = (assetMount ?? '').split(/:(?=\$)/);

    expect(source).toBe(target?.replace(/:ro$/, ''));
    expect(environment.RELAY_ASSET_ROOT).toBe(source);
  });

  it('restarts the relay, rotates its log, and gives it longer than its drain to stop', () => {
    const grace = Number(/^(\d+)s$/.exec(String(relay.stop_grace_period))?.[1]);
    const drain = Number(/:-(\d+)\}$/.exec(environment.RELAY_DRAIN_SECONDS ?? '')?.[1]);

    expect(['always', 'unless-stopped']).toContain(relay.restart);
    expect(relay.logging?.driver).toBe('json-file');
    expect(relay.logging?.options?.['max-size']).toMatch(/^\d+[km]$/);
    expect(Number(relay.logging?.options?.['max-file'])).toBeGreaterThan(1);
    expect(grace).toBeGreaterThan(drain);
    expect(relay.init).toBe(true);
    // The same path inside and on the host: the engine resolves the task containers' bind mounts on the host.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a compose variable, literally
    const workDir = '${RELAY_WORK_DIR:-/var/lib/remote-worker-relay}';
    expect(environment.RELAY_WORK_DIR).toBe(workDir);
    expect(relay.volumes).toContain(`${workDir}:${workDir}`);
  });
});

describe('runners/relay/k8s', () => {
  const files = readdirSync(join(RELAY, 'k8s')).filter((f) => /\.ya?ml$/.test(f));
  const docs = files
    .filter((f) => f !== 'kustomization.yaml')
    .flatMap((f) => parseAllDocuments(readFileSync(join(RELAY, 'k8s', f), 'utf8')).map((d) => d.toJS()))
    .filter((d): d is Record<string, any> => typeof d === 'object' && d !== null);
  const ofKind = (kind: string) => docs.filter((d) => d.kind === kind);
  const deployment = ofKind('Deployment')[0] ?? {};
  const pod = deployment.spec?.template?.spec ?? {};
  const relay = (pod.containers as Record<string, any>[] | undefined)?.find((c) => c.name === 'relay') ?? {};
  const configMap = ofKind('ConfigMap').find(
    (c) => c.metadata?.name === relay.envFrom?.[0]?.configMapRef?.name,
  );

  it('parses, and the kustomization lists every manifest', () => {
    const kustomization = parseYaml(readFileSync(join(RELAY, 'k8s/kustomization.yaml'), 'utf8')) as {
      resources: string[];
    };

    expect(files.length).toBeGreaterThan(3);
    expect(kustomization.resources.sort()).toEqual(files.filter((f) => f !== 'kustomization.yaml').sort());
    for (const kind of ['Namespace', 'ServiceAccount', 'ConfigMap', 'Deployment', 'NetworkPolicy']) {
      expect(ofKind(kind), kind).toHaveLength(1);
    }
  });

  it('gives the relay container exactly the variables of the relay config schema, every required one', () => {
    const envNames = (relay.env ?? []).map((e: { name: string }) => e.name);
    const fromConfigMap = Object.keys(configMap?.data ?? {});

    expect(configMap, 'the ConfigMap the relay reads is shipped').toBeDefined();
    expect((relay.envFrom ?? []).every((e: Record<string, unknown>) => e.secretRef === undefined)).toBe(true);
    checkNames('k8s Deployment', [...envNames, ...fromConfigMap]);
  });

  it('references its credentials as a Secret, and ships no Secret', () => {
    const secretVolumes = (pod.volumes ?? []).filter((v: Record<string, any>) => v.secret !== undefined);
    const reference = readFileSync(join(RELAY, 'k8s/secret-reference.md'), 'utf8');

    expect(ofKind('Secret')).toEqual([]);
    expect(secretVolumes).toHaveLength(1);
    expect(reference).toContain(secretVolumes[0].secret.secretName);
    for (const key of Object.keys(configMap?.data ?? {})) expect(isCredential(key), key).toBe(false);
  });

  it('runs the relay unprivileged as the image user, under its own ServiceAccount', () => {
    const user = finalStage(dockerfileOf('runners/relay'));
    const [uid] = (instructionsOf(user, 'USER').at(-1)?.args ?? '').split(':');

    expect(pod.serviceAccountName).toBe(ofKind('ServiceAccount')[0]?.metadata?.name);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(relay.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: Number(uid),
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
    });
    expect(relay.securityContext.privileged).toBeUndefined();
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy?.type).toBe('Recreate');
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(configMap?.data?.RELAY_DRAIN_SECONDS));
  });

  it('pins its images', () => {
    const images = [...(pod.initContainers ?? []), ...(pod.containers ?? [])].map((c) => String(c.image));

    for (const image of images) expect(unpinnedReason(image, new Set()), image).toBeUndefined();
  });

  it('renders with kubectl kustomize', async () => {
    const { stdout } = await execFileAsync('kubectl', ['kustomize', join(RELAY, 'k8s')]).catch((error) => {
      throw new Error(`kubectl kustomize failed (kubectl is needed on this machine): ${String(error)}`);
    });

    expect(stdout).toContain('kind: Deployment');
    expect(stdout).toContain('namespace: remote-worker-relay');
  });
});

describe('the relay bundle of runners/relay/Dockerfile', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'rw-relay-bundle-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('builds with the Dockerfile’s exact command and starts, reporting a missing configuration', async () => {
    const dockerfile = dockerfileOf('runners/relay');
    const args = bundleArgs(dockerfile, 'runners/relay/main.ts');
    const out = args.find((a) => a.startsWith('--outfile='));
    const bundle = join(scratch, 'relay.mjs');
    const entry = execForm(instructionsOf(finalStage(dockerfile), 'ENTRYPOINT').at(-1)) ?? [];
    await execFileAsync(
      join(REPO, 'node_modules/.bin/esbuild'),
      args.map((a) => (a === out ? `--outfile=${bundle}` : a)),
      { cwd: REPO },
    );

    const failure = await execFileAsync(process.execPath, [bundle], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scratch },
    }).then(
      () => undefined,
      (error: { code?: number; stderr?: string }) => error,
    );

    const scripts = (
      JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }
    ).scripts;
    if (scripts?.['build:relay'] !== undefined)
      expect(scripts['build:relay']).toBe(`esbuild ${args.join(' ')}`);
    expect(out).toBe('--outfile=dist/relay.mjs');
    expect(entry).toEqual(['node', '/opt/remote-worker/relay.mjs']);
    expect(instructionsOf(finalStage(dockerfile), 'COPY').map((c) => c.args)).toContain(
      '--from=build /src/dist/relay.mjs /opt/remote-worker/relay.mjs',
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain('remote-worker relay: Invalid settings:');
    for (const name of relayContract([]).required) expect(failure?.stderr).toContain(`${name}: is required`);
  }, 60_000);

  it('copies the docker CLI and sets the docker executor', () => {
    const image = finalStage(dockerfileOf('runners/relay'));
    const env = new Map(
      instructionsOf(image, 'ENV')
        .flatMap(keyValues)
        .map((kv) => [kv.key, kv.value]),
    );

    expect(instructionsOf(image, 'COPY').map((c) => c.args)).toContain(
      '--from=docker-cli /usr/local/bin/docker /usr/local/bin/docker',
    );
    expect(env.get('RELAY_EXECUTOR')).toBe('docker');
    checkNames(
      'relay Dockerfile ENV',
      [...env.keys()].filter((n) => n !== 'HOME' && n !== 'NODE_ENV').concat([...relayContract([]).required]),
    );
  });
});

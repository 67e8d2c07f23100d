import * as z from '../lib/zod.ts';

/**
 * What the docker executor (shared/adapters/relay/docker-executor.ts) tells
 * the task shim in `RW_CONTAINER`, as JSON: the container the tool runs in.
 * None of it is secret. One schema, in `zod/mini` like the task spec, so the
 * shim checks what it is handed against the same shape the executor writes.
 *
 * @example
 * parseContainerTarget('{"bin":"docker","name":"rw-r1","image":"alpine","runArgs":[]}');
 * // { bin: 'docker', name: 'rw-r1', image: 'alpine', runArgs: [] }
 */

/** A container name as docker and podman accept it. */
const CONTAINER_NAME = /^[a-z0-9][a-z0-9_.-]*$/;

const ContainerTargetSchema = z.readonly(
  z.object({
    /** The docker CLI (a name on PATH or a path); podman works too. */
    bin: z.string().check(z.minLength(1)),
    /** Deterministic `rw-<run id>`: a second attempt collides instead of running the play twice. */
    name: z.string().check(z.regex(CONTAINER_NAME)),
    /** Never read as a flag of `docker run`. */
    image: z.string().check(
      z.minLength(1),
      z.refine((image) => !image.startsWith('-')),
    ),
    /** Flags before the image chosen by the executor: labels, network, limits, the asset mount, extra volumes. */
    runArgs: z.readonly(z.array(z.string())),
    /** The host directory mounted for assets and where it appears inside the container. */
    assetMount: z.optional(z.readonly(z.object({ host: z.string(), container: z.string() }))),
  }),
);
export type ContainerTarget = z.output<typeof ContainerTargetSchema>;

/** Each field's problem, named without its value. */
const PROBLEMS: Record<keyof ContainerTarget, string> = {
  bin: 'bin must be the docker CLI',
  name: 'name must be a container name',
  image: 'image must be an image reference',
  runArgs: 'runArgs must be a list of strings',
  assetMount: 'assetMount must be { host, container }',
};

/** `RW_CONTAINER` → target; throws a plain Error naming the problems (the shim wraps it as a ShimError). */
export function parseContainerTarget(text: string): ContainerTarget {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Error('RW_CONTAINER is not valid JSON');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new Error('RW_CONTAINER must be a JSON object');
  }
  const result = ContainerTargetSchema.safeParse(raw);
  if (result.success) return result.data;
  const problems = new Set(
    result.error.issues.map((issue) => PROBLEMS[issue.path[0] as keyof ContainerTarget]),
  );
  throw new Error(`invalid RW_CONTAINER: ${[...problems].join('; ')}`);
}

import { createHash } from 'node:crypto';
import type { RunAttempt } from '../../ports/launcher.ts';

/**
 * How an ACI container group is tied to its run. Pure.
 *
 * - handle `aci:<resourceGroup>/<containerGroup>`: stored on the run. The
 *   resource group is in it so a run launched before an operator changed
 *   `azure_resource_group` is still found (and deleted) where it was made.
 * - container group name `rw-<runId>-<attempt>`: deterministic, so a
 *   redelivered launch finds the group an earlier call created. ACI names are
 *   1–63 lower-case letters, digits and single `-`, not at either end. A ULID
 *   run id (26 characters, Crockford base32, case-insensitive by design) is
 *   simply lower-cased; any other id that is not already a valid name part is
 *   replaced by a readable prefix plus a hash of it, so two ids never share a
 *   name.
 *
 * @example
 * containerGroupName({ runId: '01JD3Q6Z8W3S9V0M2K4T7YB5NE', attempt: 1 }) // 'rw-01jd3q6z8w3s9v0m2k4t7yb5ne-1'
 * formatAciHandle({ resourceGroup: 'rg-runs', containerGroup: 'rw-01jd3q6z8w3s9v0m2k4t7yb5ne-1' })
 * // 'aci:rg-runs/rw-01jd3q6z8w3s9v0m2k4t7yb5ne-1'
 */
export interface AciHandle {
  readonly resourceGroup: string;
  readonly containerGroup: string;
}

export type { RunAttempt };

const PREFIX = 'aci:';
const NAME_MAX = 63;
const HASH_CHARS = 12;
/** ACI container group names (and our name parts): single dashes between runs of `[a-z0-9]`. */
const VALID_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
/** Azure resource group names: letters, digits, `_ - . ( )`, up to 90, not ending in `.`. */
const RESOURCE_GROUP = /^[\w().-]{0,89}[\w()-]$/u;

export function containerGroupName({ runId, attempt }: RunAttempt): string {
  if (!Number.isInteger(attempt) || attempt < 0)
    throw new RangeError(`attempt must be a whole number: ${attempt}`);
  const tail = `-${attempt}`;
  // Lower-casing is lossless only for ids that cannot differ by case alone: ULIDs and lower-case ids.
  const plainId = ULID.test(runId) ? runId.toLowerCase() : runId;
  const plain = `rw-${plainId}${tail}`;
  if (VALID_NAME.test(plain) && plain.length <= NAME_MAX) return plain;
  const hash = createHash('sha256').update(runId).digest('hex').slice(0, HASH_CHARS);
  const room = NAME_MAX - 'rw-'.length - '-'.length - hash.length - tail.length;
  const readable = runId
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, room)
    .replace(/-+$/, '');
  return readable === '' ? `rw-${hash}${tail}` : `rw-${readable}-${hash}${tail}`;
}

export function formatAciHandle(handle: AciHandle): string {
  return `${PREFIX}${handle.resourceGroup}/${handle.containerGroup}`;
}

export function parseAciHandle(handle: string | undefined): AciHandle | undefined {
  if (handle === undefined || !handle.startsWith(PREFIX)) return undefined;
  const rest = handle.slice(PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash < 0) return undefined;
  const resourceGroup = rest.slice(0, slash);
  const containerGroup = rest.slice(slash + 1);
  if (!RESOURCE_GROUP.test(resourceGroup)) return undefined;
  if (!VALID_NAME.test(containerGroup) || containerGroup.length > NAME_MAX) return undefined;
  return { resourceGroup, containerGroup };
}

import { existsSync, lstatSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Where emptied work dirs wait for their next run, inside the work root (no run id starts with a dot). */
export const SPARE_DIR = '.spare';

/** Spare names given out by this process: a fresh one each time, so a stale entry never names a dir in use. */
let named = 0;

/**
 * Ended runs' work dirs, emptied and kept for the next runs of this relay,
 * so a new run's work dir is one `rename` of a spare instead of a `mkdir`,
 * and an ended run's dir is one `rename` instead of an `rmdir`.
 *
 * Why: on an ext4 disk whose journal the WAL's `fdatasync`s keep busy (local
 * mode's bursts), a `mkdir` waits for an inode and a directory block, 0.2–0.6
 * ms of the main thread, and the removal frees both again; a rename of an
 * empty dir touches only directory entries (20–50 µs under the same load).
 * In a burst each ended run hands its dir to the next, so only the first
 * `keep` runs make one.
 *
 * A spare is only ever an empty dir this process owns with mode 0700, as
 * the relay makes work dirs: a dir that a run changed the mode or owner of
 * is removed, not kept. A spare is checked empty again when it is taken
 * (something of the ended run that outlived it and still writes there by
 * its cwd would otherwise hand its files to the next run); a spare that is
 * not empty is removed. Spares live only as long as the relay: `clear` at
 * start and stop.
 *
 * @example
 * const spares = new SpareWorkDirs(workRoot, 8);
 * if (!spares.take(dir)) mkdirSync(dir, { mode: 0o700 });
 * // … the run ends …
 * await spares.give(dir);
 */
export class SpareWorkDirs {
  private readonly root: string;
  private readonly spares: string[] = [];

  /** @param keep at most this many spares are kept (the relay's concurrency: as many as can end at once). */
  constructor(
    workRoot: string,
    private readonly keep: number,
  ) {
    this.root = join(workRoot, SPARE_DIR);
  }

  /** How many spares are waiting. */
  get size(): number {
    return this.spares.length;
  }

  /**
   * Remove every spare, from this run of the relay or an earlier one (and
   * those of another relay sharing the work root, which then makes its dirs
   * until runs end and give it spares again).
   */
  async clear(): Promise<void> {
    this.spares.length = 0;
    await rm(this.root, { recursive: true, force: true });
  }

  /**
   * Make `dir` from a spare, with one rename; false when there is none, or
   * when it cannot be used (then the caller makes the dir itself). A `dir`
   * that exists and is empty is replaced, as rename does; a non-empty one
   * fails the rename and the spare is kept.
   */
  take(dir: string): boolean {
    for (;;) {
      const spare = this.spares.pop();
      if (spare === undefined) return false;
      let empty: boolean;
      try {
        empty = readdirSync(spare).length === 0;
      } catch {
        continue; // gone: try the next one
      }
      if (!empty) {
        this.remove(spare);
        continue;
      }
      try {
        renameSync(spare, dir);
        return true;
      } catch {
        this.spares.push(spare);
        return false;
      }
    }
  }

  /**
   * An ended run's dir: emptied and kept as a spare while fewer than `keep`
   * wait, else removed. Never rejects; a dir that cannot be emptied or
   * moved is removed as far as it can be. The checks and the rename are sync
   * calls (microseconds each; the promise API's round trips cost the main
   * thread more than the calls themselves); only what the run left in the
   * dir is removed through the promise API, as its size is the run's.
   */
  async give(dir: string): Promise<void> {
    try {
      if (!reusable(dir)) {
        await rm(dir, { recursive: true, force: true });
        return;
      }
      const entries = readdirSync(dir);
      if (entries.length > 0) {
        await Promise.all(entries.map((name) => rm(join(dir, name), { recursive: true, force: true })));
      }
      // Counted once emptied: runs ending at once all empty their dirs, and only `keep` of them stay.
      if (this.spares.length >= this.keep) {
        await rm(dir, { recursive: true, force: true });
        return;
      }
      // Named by the process too, so relays sharing a work root never rename onto each other's spares.
      named += 1;
      const spare = join(this.root, `${process.pid}.${named}`);
      try {
        renameSync(dir, spare);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !existsSync(dir)) throw error;
        // The spare root is not there yet (or another relay's start cleared it): make it, once.
        mkdirSync(this.root, { recursive: true, mode: 0o700 });
        renameSync(dir, spare);
      }
      this.spares.push(spare);
    } catch {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    }
  }

  private remove(spare: string): void {
    rm(spare, { recursive: true, force: true }).catch(() => {});
  }
}

/** A dir the relay made as it makes work dirs: a real dir (not a link) of this process's user, mode 0700. */
function reusable(dir: string): boolean {
  const s = lstatSync(dir);
  const uid = process.getuid?.();
  return s.isDirectory() && (s.mode & 0o7777) === 0o700 && (uid === undefined || s.uid === uid);
}

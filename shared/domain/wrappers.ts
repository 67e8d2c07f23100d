import type { AssetType } from './task.ts';

/**
 * Wrapper playbooks for assets that are not playbooks (`.sh`, `.ps1`, `.rpm`,
 * `.deb`). The task shim writes the text next to the inventory and runs it
 * instead of the asset.
 *
 * - Wrappers reference no play variable: extra vars are forwarded to
 *   playbooks only, and a wrapper must behave the same whatever was sent.
 * - The asset path is a YAML double-quoted scalar (JSON quoting is valid YAML)
 *   tagged `!unsafe`, so Ansible never templates it: a file named
 *   `{{ lookup('pipe', …) }}.sh` stays a file name.
 * - `.sh` / `.ps1` use `ansible.builtin.script`, whose `cmd` is split like a
 *   shell command line, so the path is also single-quoted inside it. Scripts
 *   run as the connecting user; their output is printed by a debug task
 *   because Ansible shows a successful task's stdout only with `-v`.
 * - `.ps1` runs on a Windows host through the same module: on a WinRM
 *   connection Ansible runs `.ps1` files with PowerShell. No `executable` is
 *   set (that is a POSIX notion).
 * - Packages are copied into a private remote temp dir under a fixed name
 *   (the remote side then needs no quoting at all), installed with `become`
 *   (installing a package needs root; cloud images connect as a sudo-capable
 *   user), and the temp dir is removed in an `always` block.
 * - `.rpm` uses `ansible.builtin.yum`: on ansible-core 2.14 it picks yum or
 *   dnf from the target, and on 2.17+ it is a redirect to dnf, so it works on
 *   EL7 through current Fedora. GPG checking keeps the package manager's
 *   default (dnf/yum check local files only when `localpkg_gpgcheck` is on)
 *   unless the operator sets {@link WrapperOptions.disableGpgCheck}.
 * - `.deb` uses `ansible.builtin.apt` with `deb:`, which resolves the
 *   package's dependencies from the configured repositories.
 */
export type WrappedAssetType = Exclude<AssetType, 'playbook'>;

export interface WrapperOptions {
  /** `.rpm` only: install an unsigned / untrusted package. Off unless an operator turns it on. */
  readonly disableGpgCheck?: boolean;
}

/** Quote for YAML as a JSON string, marked `!unsafe` so Ansible never templates it. */
export function yamlUnsafeString(value: string): string {
  return `!unsafe ${JSON.stringify(value)}`;
}

/** POSIX single-quoting, which Python's shlex.split (Ansible's `cmd` splitter) undoes. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * Wrapper playbook text for a script or package.
 *
 * @example
 * wrapperPlaybook('script', '/ansible/assets/hello world.sh');
 * // - name: "Run script hello world.sh" … ansible.builtin.script: cmd: !unsafe "'/ansible/assets/hello world.sh'"
 */
export function wrapperPlaybook(
  type: WrappedAssetType,
  assetPath: string,
  options: WrapperOptions = {},
): string {
  const base = baseName(assetPath);
  switch (type) {
    case 'script':
      return scriptPlay(`Run script ${base}`, assetPath, '/bin/bash');
    case 'powershell':
      return scriptPlay(`Run PowerShell script ${base}`, assetPath, undefined);
    case 'rpm':
      return packagePlay(`Install ${base}`, assetPath, 'package.rpm', [
        '        - name: Install the package',
        '          ansible.builtin.yum:',
        '            name: "{{ rw_pkg_dir.path }}/package.rpm"',
        '            state: present',
        ...(options.disableGpgCheck === true ? ['            disable_gpg_check: true'] : []),
      ]);
    case 'deb':
      return packagePlay(`Install ${base}`, assetPath, 'package.deb', [
        '        - name: Install the package',
        '          ansible.builtin.apt:',
        '            deb: "{{ rw_pkg_dir.path }}/package.deb"',
      ]);
  }
}

function scriptPlay(name: string, assetPath: string, executable: string | undefined): string {
  return [
    `- name: ${yamlUnsafeString(name)}`,
    '  hosts: all',
    '  gather_facts: false',
    '  tasks:',
    '    - name: Run the script',
    '      ansible.builtin.script:',
    `        cmd: ${yamlUnsafeString(shellQuote(assetPath))}`,
    ...(executable === undefined ? [] : [`        executable: ${executable}`]),
    '      register: rw_script',
    '    - name: Script output',
    '      ansible.builtin.debug:',
    '        var: rw_script.stdout_lines',
    '',
  ].join('\n');
}

function packagePlay(
  name: string,
  assetPath: string,
  remoteName: string,
  install: readonly string[],
): string {
  return [
    `- name: ${yamlUnsafeString(name)}`,
    '  hosts: all',
    '  gather_facts: false',
    '  tasks:',
    '    - name: Install the package',
    '      become: true',
    '      block:',
    '        - name: Make a private remote temp dir',
    '          ansible.builtin.tempfile:',
    '            state: directory',
    '            prefix: rw-pkg-',
    '          register: rw_pkg_dir',
    '        - name: Copy the package',
    '          ansible.builtin.copy:',
    `            src: ${yamlUnsafeString(assetPath)}`,
    `            dest: "{{ rw_pkg_dir.path }}/${remoteName}"`,
    "            mode: '0600'",
    ...install,
    '      always:',
    '        - name: Remove the remote temp dir',
    '          ansible.builtin.file:',
    '            path: "{{ rw_pkg_dir.path }}"',
    '            state: absent',
    '          when: rw_pkg_dir.path is defined',
    '',
  ].join('\n');
}

function baseName(path: string): string {
  const parts = path.split(/[\\/]/);
  return parts[parts.length - 1] ?? path;
}

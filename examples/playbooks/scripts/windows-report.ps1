# Run kind: vm (a Windows target over WinRM: the target's connection is "winrm")
# Variables: none — extra vars are not forwarded to scripts. The runner wraps a .ps1 asset in a
#   generated playbook (ansible.builtin.script, which runs it with PowerShell over WinRM) and
#   prints its output; a terminating error fails the run. WinRM needs the password on the local
#   runner, or bound as a secret ("ansible_password") on the cloud runners.
# Reports the host's identity, uptime and disk usage. Read-only: safe to run anywhere.
$ErrorActionPreference = 'Stop'

$os = Get-CimInstance -ClassName Win32_OperatingSystem
Write-Output "host: $env:COMPUTERNAME"
Write-Output "os: $($os.Caption) $($os.Version)"
Write-Output "uptime: $((Get-Date) - $os.LastBootUpTime)"
Write-Output 'disk usage (fixed disks):'
Get-CimInstance -ClassName Win32_LogicalDisk -Filter 'DriveType = 3' |
    ForEach-Object {
        $usedPercent = if ($_.Size -gt 0) { [math]::Round(100 * ($_.Size - $_.FreeSpace) / $_.Size) } else { 0 }
        '{0} {1,8:N1} GiB free of {2,8:N1} GiB ({3}% used)' -f $_.DeviceID, ($_.FreeSpace / 1GB), ($_.Size / 1GB), $usedPercent
    }

# Fail the run when a disk is nearly full, so a batch shows which hosts need attention.
$limit = 95
$full = Get-CimInstance -ClassName Win32_LogicalDisk -Filter 'DriveType = 3' |
    Where-Object { $_.Size -gt 0 -and (100 * ($_.Size - $_.FreeSpace) / $_.Size) -ge $limit }
if ($full) {
    throw "disks at or above ${limit}%: $(($full | ForEach-Object DeviceID) -join ', ')"
}

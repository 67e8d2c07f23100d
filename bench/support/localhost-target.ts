/** The registry row of this machine (`PUT /targets/localhost`): runs against it execute here over `connection: local`. */
export const LOCALHOST_TARGET = {
  kind: 'vm',
  cloud: 'local',
  name: 'localhost',
  address: '127.0.0.1',
  connection: 'local',
} as const;

import { JobsClient } from '@google-cloud/run';
import { InstancesClient } from '@google-cloud/compute';
const c = new JobsClient({ apiEndpoint: '127.0.0.1', port: 1, sslCreds: undefined, credentials: { client_email: 'a@b.c', private_key: 'x' } });
const d = new InstancesClient({ credentials: { client_email: 'a@b.c', private_key: 'x' } });
await c.initialize();
console.log('ok', typeof c.runJob, typeof d.aggregatedList);

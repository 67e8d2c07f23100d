/** The account and region of cdk.json's dev environment: moto runs as that account (MOTO_ACCOUNT_ID) so the template's ARNs name its resources. */
export const ACCOUNT = '111111111111';
export const REGION = 'eu-west-1';

export interface AccountCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** Credentials moto accepts while IAM is not enforced (any key does). */
export const UNCHECKED: AccountCredentials = { accessKeyId: 'test', secretAccessKey: 'test' };

/** SDK client config against moto: no retries, so a denial or a moto 500 surfaces at once. */
export function awsConfig(endpoint: string, credentials: AccountCredentials) {
  return { endpoint, region: REGION, credentials, maxAttempts: 1 } as const;
}

/** The environment a process gets for the same (AWS_ENDPOINT_URL is honoured by every v3 client). */
export function awsEnv(endpoint: string, credentials: AccountCredentials): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    ...(credentials.sessionToken === undefined ? {} : { AWS_SESSION_TOKEN: credentials.sessionToken }),
  };
}

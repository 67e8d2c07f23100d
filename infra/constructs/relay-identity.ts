import { Duration } from 'aws-cdk-lib';
import {
  ArnPrincipal,
  type PolicyDocument,
  PolicyStatement,
  Role,
  ServicePrincipal,
} from 'aws-cdk-lib/aws-iam';
import { CfnProfile } from 'aws-cdk-lib/aws-rolesanywhere';
import { Construct } from 'constructs';
import type { EnvironmentConfig } from '../config.ts';

export interface RelayIdentityProps {
  /** Name of the IAM Roles Anywhere profile (Roles Anywhere only). */
  readonly profileName: string;
  readonly relay: EnvironmentConfig['relay'];
  /** The relay's least-privilege policy: its queue and the run-table actions it uses, nothing else. */
  readonly policy: PolicyDocument;
}

const ROLES_ANYWHERE = 'rolesanywhere.amazonaws.com';

/**
 * The role the on-prem relay agent assumes: either from a configured IAM
 * principal (a role in another account, an SSO/OIDC-federated host role) or
 * through IAM Roles Anywhere with an X.509 certificate issued by the trust
 * anchor's CA, optionally pinned to certificate subject CNs. Its only
 * permissions are the relay policy's; sessions last at most an hour.
 */
export class RelayIdentity extends Construct {
  readonly role: Role;
  /** The Roles Anywhere profile the relay host's signing helper names (`--profile-arn`), when configured. */
  readonly rolesAnywhereProfile?: CfnProfile;

  constructor(scope: Construct, id: string, props: RelayIdentityProps) {
    super(scope, id);
    const relay = props.relay;
    if (relay.principalArn !== undefined) {
      this.role = new Role(this, 'Role', {
        assumedBy: new ArnPrincipal(relay.principalArn),
        description: 'Remote Worker on-prem relay: its queue and the run-table actions it uses',
        maxSessionDuration: Duration.hours(1),
        inlinePolicies: { relay: props.policy },
      });
      return;
    }
    if (relay.rolesAnywhere === undefined) throw new Error('relay: neither principalArn nor rolesAnywhere');
    const { trustAnchorArn, certificateCommonNames } = relay.rolesAnywhere;
    // Only sessions vended for certificates from this trust anchor (and, if listed, these subjects).
    const conditions = {
      ArnEquals: { 'aws:SourceArn': trustAnchorArn },
      ...(certificateCommonNames.length === 0
        ? {}
        : { StringEquals: { 'aws:PrincipalTag/x509Subject/CN': certificateCommonNames } }),
    };
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal(ROLES_ANYWHERE).withConditions(conditions),
      description:
        'Remote Worker on-prem relay (IAM Roles Anywhere): its queue and the run-table actions it uses',
      maxSessionDuration: Duration.hours(1),
      inlinePolicies: { relay: props.policy },
    });
    // The profile that lets certificates from the anchor obtain sessions for this role, and no other.
    this.rolesAnywhereProfile = new CfnProfile(this, 'RolesAnywhereProfile', {
      name: props.profileName,
      roleArns: [this.role.roleArn],
      durationSeconds: 3600,
      enabled: true,
    });
    // Roles Anywhere also tags the session and sets its source identity from the certificate.
    this.role.assumeRolePolicy?.addStatements(
      new PolicyStatement({
        principals: [new ServicePrincipal(ROLES_ANYWHERE)],
        actions: ['sts:TagSession', 'sts:SetSourceIdentity'],
        conditions,
      }),
    );
  }
}

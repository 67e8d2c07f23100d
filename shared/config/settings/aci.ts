import * as z from '../../lib/zod.ts';
import { idList, text } from './fields.ts';

/** The ACI runner (Azure Container Instances): subnet, registry and subscription. */
export const aciSettings = {
  // ACI plumbing.
  ansible_aci_subnet_id: () =>
    z.optional(
      idList(
        /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+\/subnets\/[^/]+$/i,
        'a subnet resource id (/subscriptions/…/resourceGroups/…/providers/Microsoft.Network/virtualNetworks/…/subnets/…)',
      ),
    ),
  ansible_aci_acr_server: () => z.optional(text()),
  ansible_aci_acr_username: () => z.optional(text()),
  /** The NAME of the secret holding the registry password, never the password. */
  ansible_aci_acr_password_secret: () => z.optional(text()),
  azure_subscription_id: () => z.optional(text()),
  azure_resource_group: () => z.optional(text()),
  azure_location: () => z.optional(text()),
};

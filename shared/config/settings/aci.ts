import * as z from '../../lib/zod.ts';
import { idList, optionalText } from './fields.ts';

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
  ansible_aci_acr_server: optionalText,
  ansible_aci_acr_username: optionalText,
  /** The NAME of the secret holding the registry password, never the password. */
  ansible_aci_acr_password_secret: optionalText,
  azure_subscription_id: optionalText,
  azure_resource_group: optionalText,
  azure_location: optionalText,
};

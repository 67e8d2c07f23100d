import { idList, text } from './fields.ts';

/** The ACI runner (Azure Container Instances): subnet, registry and subscription. */
export const aciSettings = {
  // ACI plumbing.
  ansible_aci_subnet_id: () =>
    idList(
      /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+\/subnets\/[^/]+$/i,
      'a subnet resource id (/subscriptions/…/resourceGroups/…/providers/Microsoft.Network/virtualNetworks/…/subnets/…)',
    ).optional(),
  ansible_aci_acr_server: () => text().optional(),
  ansible_aci_acr_username: () => text().optional(),
  /** The NAME of the secret holding the registry password, never the password. */
  ansible_aci_acr_password_secret: () => text().optional(),
  azure_subscription_id: () => text().optional(),
  azure_resource_group: () => text().optional(),
  azure_location: () => text().optional(),
};

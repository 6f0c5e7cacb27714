// Per-tenant session quotas live with the session stores (middleware must not import the
// gateway); re-exported here so gateway code and tests keep one import path for all limits.
export {
  DEFAULT_MAX_TENANTS,
  DEFAULT_TENANT_MAX_BYTES,
  DEFAULT_TENANT_MAX_SESSIONS,
  TenantQuota,
  type Evicted,
  type TenantQuotaOptions,
} from '../../middleware/session/tenant-quota.ts';

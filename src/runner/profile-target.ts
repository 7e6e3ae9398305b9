import type { Backend, Profile } from '../domain/catalog.js'
import { type Credential, resolveCredential, type SecretLookup } from '../domain/credentials.js'
import type { SettingsLayer } from '../domain/definitions.js'
import { type EffectiveSettings, mergeSettings } from '../domain/settings.js'
import { COMPATIBLE_SERVERS } from '../providers/compatible-servers.js'

/** Where and how a profile sends its requests. */
export interface ProfileTarget {
  model: string
  endpoint: string | null
  settings: EffectiveSettings
  credential: Credential
}

/** Steps 5 and 6 for one profile: settings defaults < backend < profile < request, and the credential. */
export function profileTarget(
  profile: Profile,
  backend: Backend,
  overrides: SettingsLayer | null,
  requestEnv: string | null,
  secrets: SecretLookup,
): ProfileTarget {
  return {
    model: profile.model,
    endpoint: profile.endpoint ?? backend.baseUrl ?? null,
    settings: mergeSettings(backend.settings, profile.settings, overrides),
    credential: resolveCredential(
      {
        directKey: profile.apiKey,
        requestEnv,
        profileEnv: profile.credentialEnv,
        // a profile sending elsewhere than its backend never carries the backend's key there
        backendEnv: profile.endpoint == null || profile.endpoint === backend.baseUrl ? backend.credentialEnv : null,
        // the fake backend, and servers on one's own machines, take no key
        required: backend.kind !== 'FAKE' && (backend.dialect == null || COMPATIBLE_SERVERS[backend.dialect].needsKey),
      },
      secrets,
    ),
  }
}

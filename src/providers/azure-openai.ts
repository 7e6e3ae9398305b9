import { type ChatCompletionsVendor, OPENAI_WIRE } from './openai-client.js'
import { vendorFetch } from './vendor-http.js'

/** Azure OpenAI's latest GA api-version, for a backend that names none. */
export const AZURE_API_VERSION = '2024-10-21'

/**
 * Azure OpenAI through the openai SDK's own AzureOpenAI: the backend's baseUrl is the resource
 * endpoint (else the SDK's AZURE_OPENAI_ENDPOINT), the profile's model is the deployment (the SDK
 * puts it in the path), the key goes as `api-key`. Azure takes max_completion_tokens, which its
 * reasoning deployments require.
 */
export function azureOpenAI(apiVersion: string): ChatCompletionsVendor {
  return {
    name: 'Azure OpenAI',
    async connect(endpoint, apiKey) {
      const { AzureOpenAI } = await import('openai')
      return new AzureOpenAI({
        apiKey,
        apiVersion,
        ...(endpoint && { endpoint }),
        maxRetries: 0,
        timeout: 10 * 60_000,
        fetch: vendorFetch,
      })
    },
    wire: () => OPENAI_WIRE,
  }
}

import type { Principal } from '../domain/access.js'
import { type StoredFileInfo, UPLOAD_MEDIA_TYPES } from '../domain/content-parts.js'
import { FileTooLargeError, ForbiddenError, InvalidRequestError } from '../domain/errors.js'
import { sha256Hex } from '../domain/hash.js'
import type { FileLimits } from '../domain/limits.js'
import type { Store } from '../store/store.js'

/** Uploaded files: checked, digested and kept for the retention time, per tenant. */
export class FileService {
  constructor(
    private readonly store: Store,
    readonly limits: FileLimits,
  ) {}

  /** Keeps a file a write key uploaded; durable before it answers. Nothing is kept when it is refused. */
  async upload(principal: Principal, file: { mediaType: string; name: string | null; data: Uint8Array }): Promise<StoredFileInfo> {
    if (principal.role === 'read') throw new ForbiddenError('uploading a file needs a write key')
    const mediaType = file.mediaType.split(';')[0]!.trim().toLowerCase()
    if (!UPLOAD_MEDIA_TYPES.includes(mediaType)) {
      throw InvalidRequestError.at('file', `media type '${mediaType || 'none'}' is not one of ${UPLOAD_MEDIA_TYPES.join(', ')}`)
    }
    if (file.data.byteLength > this.limits.maxFileBytes) throw new FileTooLargeError(this.limits.maxFileBytes)
    if (file.data.byteLength === 0) throw InvalidRequestError.at('file', 'is empty')
    return this.store.files.save({
      tenantId: principal.tenantId,
      sha256: sha256Hex(file.data),
      mediaType,
      name: file.name,
      data: file.data,
      expiresAt: new Date(Date.now() + this.limits.retentionMs),
    })
  }
}

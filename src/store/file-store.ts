import { randomUUID } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import type { StoredFileInfo } from '../domain/content-parts.js'
import { sha256Hex } from '../domain/hash.js'
import type { Db } from './database.js'
import { driverChecked } from './errors.js'

const infoSelect = { id: true, sha256: true, mediaType: true, bytes: true, name: true, createdAt: true, expiresAt: true } as const

/** A file to keep: its bytes, digest and type, until `expiresAt`. */
export interface NewFile {
  tenantId: string
  sha256: string
  mediaType: string
  name: string | null
  data: Uint8Array
  expiresAt: Date
}

/**
 * Uploaded files per tenant: the bytes in the database (bytea, blob), or in a directory when
 * one is given (its row then holds none). A file is durable before its row exists: written,
 * synced and renamed into place first. The same bytes and type uploaded again are the same file,
 * kept longer.
 */
export class FileStore {
  constructor(
    private readonly db: Db,
    private readonly dir: string | null,
  ) {}

  async save(file: NewFile): Promise<StoredFileInfo> {
    const { tenantId, sha256, mediaType, expiresAt } = file
    await this.sweep(tenantId, new Date())
    const same = await this.db.storedFile.findFirst({ where: { tenantId, sha256, mediaType }, select: infoSelect })
    if (same) {
      const kept = await this.db.storedFile.update({
        where: { tenantId_id: { tenantId, id: same.id } },
        data: { expiresAt: new Date(Math.max(expiresAt.getTime(), same.expiresAt.getTime())) },
        select: infoSelect,
      })
      return toInfo(kept)
    }
    const id = randomUUID()
    const target = this.dir === null ? null : this.pathOf(tenantId, id)
    if (target !== null) await driverChecked(this.writeDurably(target, file.data))
    // bytes without their row are nobody's: a row the database refuses takes them along
    const row = await this.db.storedFile
      .create({
        data: {
          tenantId,
          id,
          sha256,
          mediaType,
          bytes: file.data.byteLength,
          name: file.name,
          data: this.dir === null ? Uint8Array.from(file.data) : null,
          expiresAt,
        },
        select: infoSelect,
      })
      .catch(async (error: unknown) => {
        if (target !== null) await rm(target, { force: true })
        throw error
      })
    return toInfo(row)
  }

  /** A file's description, unless it does not exist or expired by `now`. */
  async find(tenantId: string, id: string, now: Date): Promise<StoredFileInfo | null> {
    const row = await this.db.storedFile.findUnique({ where: { tenantId_id: { tenantId, id } }, select: infoSelect })
    return row && row.expiresAt > now ? toInfo(row) : null
  }

  /** The bytes of the files named, by id (a file gone since admission is missing from the map). */
  async read(tenantId: string, ids: readonly string[]): Promise<Map<string, Uint8Array>> {
    const out = new Map<string, Uint8Array>()
    if (ids.length === 0) return out
    const rows = await this.db.storedFile.findMany({ where: { tenantId, id: { in: [...ids] } }, select: { id: true, data: true } })
    for (const row of rows) out.set(row.id, row.data ?? (await readFile(this.pathOf(tenantId, row.id))))
    return out
  }

  /** Drops the tenant's expired files, rows and bytes. */
  private async sweep(tenantId: string, now: Date): Promise<void> {
    const expired = await this.db.storedFile.findMany({ where: { tenantId, expiresAt: { lte: now } }, select: { id: true } })
    if (expired.length === 0) return
    await this.db.storedFile.deleteMany({ where: { tenantId, id: { in: expired.map((f) => f.id) } } })
    if (this.dir !== null) await Promise.all(expired.map((f) => rm(this.pathOf(tenantId, f.id), { force: true })))
  }

  private pathOf(tenantId: string, id: string): string {
    // the tenant's folder is named by a digest: tenant ids are the operator's strings
    return path.join(this.dir!, sha256Hex(tenantId).slice(0, 32), id)
  }

  private async writeDurably(target: string, data: Uint8Array): Promise<void> {
    await mkdir(path.dirname(target), { recursive: true })
    const partial = `${target}.partial`
    const handle = await open(partial, 'w')
    try {
      await handle.writeFile(data)
      await handle.sync()
    } catch (error) {
      await handle.close()
      await rm(partial, { force: true })
      throw error
    }
    await handle.close()
    await rename(partial, target)
  }
}

function toInfo(row: {
  id: string
  sha256: string
  mediaType: string
  bytes: number
  name: string | null
  createdAt: Date
  expiresAt: Date
}): StoredFileInfo {
  return { ...row, createdAt: row.createdAt.toISOString(), expiresAt: row.expiresAt.toISOString() }
}

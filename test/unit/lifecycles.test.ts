import { describe, expect, it } from 'vitest'
import {
  advanceEntry,
  advanceRun,
  ENTRY_TRANSITIONS,
  entryStatusOf,
  IllegalTransitionError,
  RUN_TRANSITIONS,
} from '../../src/domain/lifecycles.js'
import { ENTRY_STATUSES, type EntryStatus, RUN_STATUSES, type RunStatus } from '../../src/domain/records.js'
import type { SessionStream } from '../../src/events/session-stream.js'
import { type ActiveRun, SessionActor } from '../../src/queue/session-actor.js'
import type { SessionHistory } from '../../src/store/session-history.js'

describe('the run state machine', () => {
  it('walks the documented path: preparing, waiting, generating, validating, repairing, completed', () => {
    const run = { status: 'PREPARING' as RunStatus }
    for (const to of ['WAITING_CAPACITY', 'GENERATING', 'VALIDATING', 'REPAIRING', 'GENERATING', 'VALIDATING', 'COMPLETED'] as const) {
      advanceRun(run, to)
      expect(run.status).toBe(to)
    }
  })

  it('refuses an illegal transition and leaves the run as it was', () => {
    const run = { status: 'COMPLETED' as RunStatus }
    expect(() => advanceRun(run, 'GENERATING')).toThrow(IllegalTransitionError)
    expect(() => advanceRun(run, 'GENERATING')).toThrow('illegal run transition COMPLETED → GENERATING')
    expect(run.status).toBe('COMPLETED')
    const preparing = { status: 'PREPARING' as RunStatus }
    expect(() => advanceRun(preparing, 'VALIDATING')).toThrow(IllegalTransitionError)
    expect(() => advanceRun(preparing, 'REPAIRING')).toThrow(IllegalTransitionError)
    expect(preparing.status).toBe('PREPARING')
  })

  it('has a row for every status, ends only in the terminal ones, and lets every live status fail or abort', () => {
    expect(Object.keys(RUN_TRANSITIONS).sort()).toEqual([...RUN_STATUSES].sort())
    const terminal = RUN_STATUSES.filter((s) => RUN_TRANSITIONS[s].length === 0)
    expect(terminal.sort()).toEqual(['ABORTED', 'COMPLETED', 'FAILED'])
    for (const status of RUN_STATUSES.filter((s) => !terminal.includes(s))) {
      expect(RUN_TRANSITIONS[status]).toEqual(expect.arrayContaining(['FAILED', 'ABORTED']))
    }
  })
})

describe('the queue entry state machine', () => {
  it('walks queued, starting, running, completed and refuses going back', () => {
    const entry = { status: 'QUEUED' as EntryStatus }
    advanceEntry(entry, 'STARTING')
    advanceEntry(entry, 'RUNNING')
    advanceEntry(entry, 'COMPLETED')
    expect(() => advanceEntry(entry, 'QUEUED')).toThrow('illegal queue entry transition COMPLETED → QUEUED')
  })

  it('lets a scheduled entry join the line or be cancelled, never start directly', () => {
    expect(() => advanceEntry({ status: 'SCHEDULED' }, 'STARTING')).toThrow(IllegalTransitionError)
    expect(Object.keys(ENTRY_TRANSITIONS).sort()).toEqual([...ENTRY_STATUSES].sort())
  })

  it('mirrors a finished run, and refuses one that has not finished', () => {
    expect(entryStatusOf({ status: 'COMPLETED' })).toBe('COMPLETED')
    expect(entryStatusOf({ status: 'FAILED' })).toBe('FAILED')
    expect(entryStatusOf({ status: 'ABORTED' })).toBe('CANCELLED')
    expect(() => entryStatusOf({ status: 'GENERATING' })).toThrow(IllegalTransitionError)
  })
})

describe('the session queue state machine', () => {
  const queue = () => new SessionActor('t', 's', 1, {} as SessionStream, {} as SessionHistory)
  const active = {} as ActiveRun

  it('runs one entry at a time and looks again when it ends', () => {
    const q = queue()
    q.started(active)
    expect(q.status).toBe('RUNNING')
    expect(() => q.started(active)).toThrow('illegal session queue transition RUNNING → RUNNING')
    q.runEnded()
    expect([q.status, q.active]).toEqual(['IDLE', null])
  })

  it('is held by a run a previous owner left live until that run ends, and starts nothing meanwhile', () => {
    const q = queue()
    q.hold('left-live')
    expect(q.busy).toBe(true)
    expect(() => q.started(active)).toThrow(IllegalTransitionError)
    expect(q.unhold('another')).toBe(false)
    expect(q.unhold('left-live')).toBe(true)
    expect(q.status).toBe('IDLE')
  })

  it('stays closing once closed, through the end of the run it had', () => {
    const q = queue()
    q.started(active)
    q.close()
    q.runEnded()
    expect(q.status).toBe('CLOSING')
    expect(q.idle).toBe(false)
    expect(() => q.started(active)).toThrow('illegal session queue transition CLOSING → RUNNING')
  })
})

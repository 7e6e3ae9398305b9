import type { TerminalReason } from '../domain/records.js'
import type { Stall } from './run-recorder.js'

/** Why a run was stopped from outside; the abort signal's reason. */
export class RunStop {
  constructor(
    readonly reason: Extract<TerminalReason, 'ABORTED' | 'CANCELLED' | 'SUPERSEDED' | 'SHUTDOWN' | 'STALE' | 'NO_PROGRESS'>,
    readonly message: string,
    /** A superseding INTERRUPT keeps the stopped run's turn in the history, marked interrupted. */
    readonly keepTurn = false,
    readonly errorCode = 'CANCELLED',
  ) {}
}

export const STALLS: Record<Stall, RunStop> = {
  STALE: new RunStop('STALE', 'the run was ended by the reaper: its heartbeat was not written in time', false, 'INTERNAL'),
  NO_PROGRESS: new RunStop('NO_PROGRESS', 'the run made no progress (no token, steer or repair) for too long', false, 'GENERATION'),
}

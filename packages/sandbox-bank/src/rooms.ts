/**
 * Each TPP in its own room: a room is a whole bank state (customers, accounts, payments, consents,
 * baskets, SCA) that only the TPP named by the gateway's organisation header reads and changes. A
 * room starts as the generated data on the TPP's first call; a reset starts the caller's room
 * again; all rooms are reset only by the operator (SandboxBank.reset, the gateway's admin listener).
 */

import type { BankState } from "./context.js";
import type { Authorisation } from "./sca-store.js";

/** Beyond it a new TPP is refused (each room holds a copy of the generated data). */
export const DEFAULT_MAX_ROOMS = 1_000;

export class Rooms {
  private readonly rooms = new Map<string, BankState>();

  constructor(
    private readonly fresh: () => BankState,
    private readonly capacity: number = DEFAULT_MAX_ROOMS,
  ) {}

  get size(): number {
    return this.rooms.size;
  }

  /** The TPP's room, opened on its first call; undefined when the bank holds `capacity` rooms already. */
  open(organizationId: string): BankState | undefined {
    const room = this.rooms.get(organizationId);
    if (room !== undefined) return room;
    if (this.rooms.size >= this.capacity) return undefined;
    const opened = this.fresh();
    this.rooms.set(organizationId, opened);
    return opened;
  }

  get(organizationId: string): BankState | undefined {
    return this.rooms.get(organizationId);
  }

  /** A state file's room, as it was. */
  restore(organizationId: string, room: BankState): void {
    this.rooms.set(organizationId, room);
  }

  /** The caller's room from the start; returns it. */
  reset(organizationId: string): BankState {
    const fresh = this.fresh();
    this.rooms.set(organizationId, fresh);
    return fresh;
  }

  /** Every room gone: each TPP starts again from the generated data at its next call. */
  resetAll(): void {
    this.rooms.clear();
  }

  entries(): IterableIterator<[string, BankState]> {
    return this.rooms.entries();
  }

  /**
   * The room whose SCA link this is: the PSU's browser carries no TPP identity, only the
   * authorisation id, which is random and so names one room.
   */
  findAuthorisation(
    authorisationId: string,
  ):
    | { readonly organizationId: string; readonly room: BankState; readonly authorisation: Authorisation }
    | undefined {
    for (const [organizationId, room] of this.rooms) {
      const authorisation = room.sca.authorisation(authorisationId);
      if (authorisation !== undefined) return { organizationId, room, authorisation };
    }
    return undefined;
  }
}

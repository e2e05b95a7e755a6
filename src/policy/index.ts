/**
 * healthd's decisions, handed to the store when it is opened (the store reads the facts in a transaction,
 * asks, and writes the answer in the same transaction; see Policy in src/domain/model.ts):
 * - decide.ts: what a batch of results means (states, incidents, quorum, silences, dependencies, warnings,
 *   notifications and their text, rollups);
 * - dependencies.ts: whether a change of configuration leaves the graph of dependsOn whole;
 * - assign.ts: which node runs which check (all of them, or new ones).
 * The store also imports the rest of the policy's rules directly (lease.ts, pools.ts, delivery.ts, change.ts):
 * it reads the rows, asks, and writes what they answer, deciding nothing itself.
 */
import type { Policy } from "../domain/batch.ts";
import { assign, place } from "./assign.ts";
import { decide } from "./decide.ts";
import { dependencyProblems } from "./dependencies.ts";

export const policy: Policy = { decide, dependencyProblems, assign, place };

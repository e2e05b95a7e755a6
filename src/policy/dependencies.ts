/**
 * The graph of dependsOn between services: pure. A reference must name a service that exists, and the graph
 * must have no cycle. A write that breaks it is refused whole: the document's own fault when it is wrong (an
 * unknown reference, a cycle), a conflict when it would leave another service pointing at nothing.
 */
import { qualify, type DependencyProblem, type GraphNode } from "../domain/model.ts";
import { type Upstream } from "../domain/batch.ts";

const name = (n: { serverId: string; serviceId: string }) => `${n.serverId}/${n.serviceId}`;

/**
 * The problems of the graph after a write. `nodes` are the services with dependencies (the others can be in
 * no cycle), `exists` says whether a service exists, and `written` which services the write's documents
 * named: their unknown references are the document's fault (400); other services left pointing at nothing
 * are the write's fault (409).
 */
export function dependencyProblems(
  nodes: readonly GraphNode[],
  exists: (service: string) => boolean,
  written: (service: string) => boolean,
): DependencyProblem[] {
  const problems: DependencyProblem[] = [];
  const dangling = new Map<string, string[]>();
  for (const node of nodes) {
    node.dependsOn.forEach((ref, index) => {
      const target = qualify(ref, node.serverId);
      if (exists(target)) return;
      if (written(name(node))) problems.push({ kind: "unknown", service: name(node), index, ref });
      else dangling.set(target, [...(dangling.get(target) ?? []), name(node)]);
    });
  }
  for (const [missing, dependents] of dangling) problems.push({ kind: "dangling", dependents, missing });
  const cycle = findCycle(nodes, exists);
  if (cycle) problems.push({ kind: "cycle", cycle });
  return problems;
}

/** A cycle as the names along it (first repeated at the end), or undefined. Iterative depth-first search. */
function findCycle(nodes: readonly GraphNode[], exists: (service: string) => boolean): string[] | undefined {
  const edges = new Map(nodes.map((n) => [name(n), n.dependsOn.map((ref) => qualify(ref, n.serverId)).filter(exists)]));
  const state = new Map<string, "visiting" | "done">();
  for (const start of edges.keys()) {
    if (state.has(start)) continue;
    const path: string[] = [];
    const stack: { node: string; next: number }[] = [{ node: start, next: 0 }];
    state.set(start, "visiting");
    path.push(start);
    while (stack.length > 0) {
      const top = stack.at(-1)!;
      const targets = edges.get(top.node) ?? [];
      if (top.next < targets.length) {
        const target = targets[top.next++]!;
        if (state.get(target) === "visiting") return [...path.slice(path.indexOf(target)), target];
        if (!state.has(target)) {
          state.set(target, "visiting");
          path.push(target);
          stack.push({ node: target, next: 0 });
        }
      } else {
        state.set(top.node, "done");
        path.pop();
        stack.pop();
      }
    }
  }
  return undefined;
}

/**
 * The services with an open incident that explain a failure of a service that depends on `dependsOn` (full
 * names): each dependency with an open incident and, through each dependency that fails without one of its
 * own (it is blocked too), whatever blocks that one. So in a chain web -> app -> db with db down, app and
 * web are both blocked by db. Empty when nothing upstream is down.
 */
export function blockers(dependsOn: readonly string[], upstream: (name: string) => Upstream | undefined): string[] {
  const found: string[] = [];
  if (dependsOn.length === 0) return found; // most services: nothing more to allocate for every result
  const seen = new Set<string>();
  const stack = [...dependsOn].reverse();
  while (stack.length > 0) {
    const name = stack.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const u = upstream(name);
    if (u?.incidentOpen) found.push(name);
    else if (u?.failing) stack.push(...[...u.dependsOn].reverse());
  }
  return found;
}

/**
 * What is wrong with a refused write, for the one who made it: the document's own faults (unknown references,
 * a cycle) located by `pathOf` (where a service's reference sits in the written documents), or, when the write
 * would leave other services pointing at nothing, a conflict naming them.
 */
export function describeRefusal(
  problems: readonly DependencyProblem[],
  pathOf: (service: string, index: number) => string | undefined,
): { readonly conflict: boolean; readonly detail: string; readonly errors: readonly { readonly path: string; readonly message: string }[] } {
  const errors = problems.flatMap((p) =>
    p.kind === "unknown" ? [{ path: pathOf(p.service, p.index) ?? "", message: `names ${p.ref}, which does not exist; create it, or remove it from dependsOn` }] : [],
  );
  const cycle = problems.find((p) => p.kind === "cycle");
  if (cycle) {
    // Told from a service the write named, which is where the reader will look.
    const ring = cycle.cycle.slice(0, -1);
    const at = Math.max(0, ring.findIndex((service) => pathOf(service, 0) !== undefined));
    const path = [...ring.slice(at), ...ring.slice(0, at), ring[at]!];
    errors.push({
      path: pathOf(path[0]!, 0)?.replace(/\/\d+$/, "") ?? "",
      message: `makes a cycle: ${path.join(" -> ")}; a service cannot depend on itself, even through others`,
    });
  }
  if (errors.length > 0) return { conflict: false, detail: `dependsOn is invalid: ${errors[0]!.message}`, errors };
  const named = problems.flatMap((p) => (p.kind === "dangling" ? [`${p.dependents.join(", ")} ${p.dependents.length === 1 ? "depends" : "depend"} on ${p.missing}`] : []));
  return { conflict: true, detail: `${named.join("; ")}: remove it from their dependsOn first`, errors: [] };
}

/**
 * The graph of dependsOn between services: pure. A reference must name a service that exists, and the graph
 * must have no cycle. A write that breaks it is refused whole: 400 when the document itself is wrong (an
 * unknown reference, a cycle), 409 when it would leave another service pointing at nothing.
 */
export interface Node {
  readonly serverId: string;
  readonly serviceId: string;
  readonly dependsOn: readonly string[];
}

export type DependencyProblem =
  | { readonly kind: "unknown"; readonly service: string; readonly index: number; readonly ref: string }
  | { readonly kind: "dangling"; readonly dependents: readonly string[]; readonly missing: string }
  | { readonly kind: "cycle"; readonly cycle: readonly string[] };

const name = (n: { serverId: string; serviceId: string }) => `${n.serverId}/${n.serviceId}`;

/** "serverId/serviceId", or "serviceId" of `serverId`, as a full name. */
export function qualify(ref: string, serverId: string): string {
  return ref.includes("/") ? ref : `${serverId}/${ref}`;
}

/**
 * The problems of the graph after a write. `nodes` are the services with dependencies (the others can be in
 * no cycle), `exists` says whether a service exists, and `written` which services the write's documents
 * named: their unknown references are the document's fault (400); other services left pointing at nothing
 * are the write's fault (409).
 */
export function dependencyProblems(
  nodes: readonly Node[],
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
function findCycle(nodes: readonly Node[], exists: (service: string) => boolean): string[] | undefined {
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

/** What a service's dependents need to know of it. */
export interface Upstream {
  /** Its own dependencies, as full names. */
  readonly dependsOn: readonly string[];
  readonly incidentOpen: boolean;
  /** Its last check failed. */
  readonly failing: boolean;
}

/**
 * The services with an open incident that explain a failure of a service that depends on `dependsOn` (full
 * names): each dependency with an open incident and, through each dependency that fails without one of its
 * own (it is blocked too), whatever blocks that one. So in a chain web -> app -> db with db down, app and
 * web are both blocked by db. Empty when nothing upstream is down.
 */
export function blockers(dependsOn: readonly string[], upstream: (name: string) => Upstream | undefined): string[] {
  const found: string[] = [];
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

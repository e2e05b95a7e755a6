/**
 * How deep a YAML (or JSON, which is YAML) text nests, measured before it is parsed: apply and import refuse a
 * file past limits.nesting rather than hand it to parsers and validators that recurse. Pure: text in, the first
 * line too deep out.
 *
 * It reads the yaml package's Lexer, which only cuts the text into tokens and builds nothing: quoted scalars,
 * block scalars (`|`, `>`) and comments come whole, so a `[` or an indented line inside them is not a level.
 * A flow collection (`[`, `{`) is a level until it closes. A block collection is a level from the column of
 * its first entry (`- `, `? `, or a key before `:`) until an entry starts at a smaller column; a sequence may
 * sit at its parent key's column (`key:\n- item`), as YAML allows. Where a line is oddly indented it errs
 * towards a level too many, which only matters to a file already near the limit.
 */
import { CST, Lexer } from "yaml";

/** The 1-based line where `text` first nests collections deeper than `limit`, or undefined if it never does. */
export function tooDeepAt(text: string, limit: number): number | undefined {
  const blocks: { col: number; kind: "seq" | "map" }[] = [];
  let flow = 0;
  let line = 1;
  let col = 0;
  // Where the node on this line that a `:` may make a key began (its anchor or tag first).
  let nodeStart: number | undefined;

  const open = (at: number, kind: "seq" | "map"): boolean => {
    for (let top = blocks.at(-1); top && (top.col > at || (top.col === at && top.kind === "seq" && kind === "map")); top = blocks.at(-1)) blocks.pop();
    const top = blocks.at(-1);
    if (!(top && top.col === at && top.kind === kind)) blocks.push({ col: at, kind });
    return blocks.length + flow > limit;
  };

  for (const source of new Lexer().lex(text)) {
    const type = CST.tokenType(source);
    if (flow === 0) {
      if (type === "seq-item-ind" || type === "explicit-key-ind") {
        if (open(col, type === "seq-item-ind" ? "seq" : "map")) return line;
        nodeStart = undefined;
      } else if (type === "map-value-ind") {
        if (open(nodeStart ?? col, "map")) return line;
        nodeStart = undefined;
      } else if (type === "doc-start" || type === "doc-end") {
        blocks.length = 0;
      } else if (nodeStart === undefined && (type === null || type === "alias" || type === "anchor" || type === "tag" || type === "single-quoted-scalar" || type === "double-quoted-scalar" || type === "flow-map-start" || type === "flow-seq-start")) {
        nodeStart = col;
      }
    }
    if (type === "flow-map-start" || type === "flow-seq-start") {
      flow++;
      if (blocks.length + flow > limit) return line;
    } else if (type === "flow-map-end" || type === "flow-seq-end") {
      flow = Math.max(0, flow - 1);
    }
    // The column after the token; a token that holds line breaks (a newline, a block scalar) starts a line.
    const lastBreak = source.lastIndexOf("\n");
    if (lastBreak === -1) {
      // Control characters the lexer adds (the start of a plain scalar, the document mode) take no room.
      if (!(source.length === 1 && source < " ")) col += source.length;
    } else {
      for (let i = source.indexOf("\n"); i !== -1; i = source.indexOf("\n", i + 1)) line++;
      col = source.length - lastBreak - 1;
      nodeStart = undefined;
    }
  }
  return undefined;
}

/** Output for people: colour only on a terminal and never when NO_COLOR is set (https://no-color.org). */
const codes = { green: 32, red: 31, yellow: 33, dim: 2 } as const;

export function colourWanted(stream: NodeJS.WriteStream): boolean {
  return Boolean(stream.isTTY) && !process.env.NO_COLOR;
}

export function paint(text: string, colour: keyof typeof codes, enabled: boolean): string {
  return enabled ? `\x1b[${codes[colour]}m${text}\x1b[0m` : text;
}

/** Rows (the first one the header) as columns two spaces apart, each as wide as its widest cell. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd() + "\n").join("");
}

/** Output for people: colour only on a terminal and never when NO_COLOR is set (https://no-color.org). */
const codes = { green: 32, red: 31, yellow: 33, dim: 2 } as const;

export function colourWanted(stream: NodeJS.WriteStream): boolean {
  return Boolean(stream.isTTY) && !process.env.NO_COLOR;
}

export function paint(text: string, colour: keyof typeof codes, enabled: boolean): string {
  return enabled ? `\x1b[${codes[colour]}m${text}\x1b[0m` : text;
}

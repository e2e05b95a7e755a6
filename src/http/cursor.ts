/**
 * The cursors of paged lists (entries, incidents): the last item's id, opaque to clients so that its form may
 * change, and marked with what it pages, so that one list's cursor does not pass for another's.
 */
export interface Cursor {
  encode(id: number): string;
  /** The id, or undefined when `text` is not a cursor of this list. */
  decode(text: string): number | undefined;
}

function cursor(mark: string): Cursor {
  const pattern = new RegExp(`^${mark}([0-9]{1,15})$`);
  return {
    encode: (id) => Buffer.from(`${mark}${id}`).toString("base64url"),
    decode: (text) => {
      const m = pattern.exec(Buffer.from(text, "base64url").toString());
      return m ? Number(m[1]) : undefined;
    },
  };
}

export const entryCursor = cursor("e");
export const incidentCursor = cursor("i");

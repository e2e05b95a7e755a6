/** What a channel's sender takes and answers (senders.ts, email.ts), and the text every type sends. */
import type { NotificationBody } from "../domain/model.ts";
import type { NotificationEvent } from "../domain/notification.ts";
import type { ChannelDocument } from "../domain/schema/channel.ts";
import { render } from "../domain/template.ts";

/** What one delivery sends: the event templates see, and the ntfy-form title and message healthd wrote. */
export interface Outgoing {
  /** ackUrl: the signed link that acknowledges its incident (notify/ack-link.ts); absent without --public-url. */
  readonly event: NotificationEvent & { readonly statusPage: string | null; readonly ackUrl?: string | undefined };
  readonly body: NotificationBody;
  /** The service's notifyTopic, which the ntfy channel publishes to instead of its own topic. */
  readonly topic: string | null;
}

export type SendResult =
  | { readonly ok: true; readonly id: string }
  | { readonly ok: false; readonly retryable: boolean; readonly status: number | null; readonly error: string };

export interface Sender {
  send(out: Outgoing): Promise<SendResult>;
  /**
   * Whether this delivery already reached the destination (a process died while sending it), where the
   * destination can be asked: the id it has it under, or undefined. Without it, the delivery is sent again
   * with the same idempotency key.
   */
  findSent?(out: Outgoing, since: number): Promise<string | undefined>;
  close(): Promise<void>;
}

/** The title and message to send: the channel's templates over the event, or healthd's own text. */
export function texts(doc: ChannelDocument, out: Outgoing): { title: string; message: string } {
  return {
    title: doc.title === undefined ? (out.body.title ?? "") : render(doc.title, out.event, "text"),
    message: doc.message === undefined ? (out.body.message ?? "") : render(doc.message, out.event, "text"),
  };
}


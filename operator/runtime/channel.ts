/**
 * An in-process channel for one controller to wake another (controller-runtime's
 * `source.Channel`): the issuer controller, when what a card's signing depends on changed, sends
 * the card's key; the AgentCard controller, built with `.wakes(channel)`, reconciles it. Neither
 * holds the other: the manager makes the channel and hands it to both.
 */
export class Channel {
  private readonly subscribers: Array<(key: string) => void> = [];

  /** For the builder: each key sent from now on. */
  subscribe(subscriber: (key: string) => void): void {
    this.subscribers.push(subscriber);
  }

  send(key: string): void {
    for (const s of this.subscribers) s(key);
  }
}

/**
 * A binary min-heap of (time, item): the scheduler's queue of next runs. One timer waits for the earliest
 * entry, however many services there are; removal is lazy (the scheduler ignores entries it no longer wants).
 */
export class TimeHeap<T> {
  #times: number[] = [];
  #items: T[] = [];

  get size(): number {
    return this.#times.length;
  }

  peekTime(): number | undefined {
    return this.#times[0];
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(time: number, item: T): void {
    const times = this.#times;
    const items = this.#items;
    let i = times.length;
    times.push(time);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent]! <= time) break;
      times[i] = times[parent]!;
      items[i] = items[parent]!;
      i = parent;
    }
    times[i] = time;
    items[i] = item;
  }

  pop(): T | undefined {
    const times = this.#times;
    const items = this.#items;
    if (times.length === 0) return undefined;
    const top = items[0];
    const lastTime = times.pop()!;
    const lastItem = items.pop()!;
    const n = times.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && times[right]! < times[left]! ? right : left;
        if (times[child]! >= lastTime) break;
        times[i] = times[child]!;
        items[i] = items[child]!;
        i = child;
      }
      times[i] = lastTime;
      items[i] = lastItem;
    }
    return top;
  }
}

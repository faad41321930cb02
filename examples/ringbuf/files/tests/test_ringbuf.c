/* Tests of the ring buffer, one TAP line each. */
#include <stdio.h>

#include "ringbuf.h"

static int failures = 0;
static int number = 0;

static void check(int ok, const char *name) {
  printf("%s %d - %s\n", ok ? "ok" : "not ok", ++number, name);
  if (!ok) failures++;
}

int main(void) {
  unsigned char storage[4];
  struct ringbuf rb;
  unsigned char byte = 0;
  printf("TAP version 13\n1..4\n");

  ringbuf_init(&rb, storage, sizeof storage);
  check(ringbuf_size(&rb) == 0 && !ringbuf_pop(&rb, &byte), "empty_after_init");

  int pushed = 0;
  while (ringbuf_push(&rb, (unsigned char)(pushed + 1))) pushed++;
  check(pushed == 4 && ringbuf_size(&rb) == 4, "holds_capacity_bytes");

  int in_order = 1;
  for (int i = 1; i <= 4; i++) in_order &= ringbuf_pop(&rb, &byte) && byte == i;
  check(in_order && ringbuf_size(&rb) == 0, "fifo_order");

  /* wrap around: the head has moved, indices must wrap */
  ringbuf_push(&rb, 7);
  ringbuf_push(&rb, 8);
  check(ringbuf_pop(&rb, &byte) && byte == 7 && ringbuf_pop(&rb, &byte) && byte == 8, "wraps_around");
  return failures == 0 ? 0 : 1;
}

/* A fixed-capacity FIFO of bytes over storage the caller provides: no allocation,
 * no locking (one producer and one consumer on the same thread). */
#ifndef RINGBUF_H
#define RINGBUF_H

#include <stdbool.h>
#include <stddef.h>

struct ringbuf {
  unsigned char *storage;
  size_t capacity;
  size_t head; /* index of the oldest byte */
  size_t size; /* bytes held */
};

void ringbuf_init(struct ringbuf *rb, unsigned char *storage, size_t capacity);
/* false (and nothing stored) when the buffer is full */
bool ringbuf_push(struct ringbuf *rb, unsigned char byte);
/* false (and *byte untouched) when the buffer is empty */
bool ringbuf_pop(struct ringbuf *rb, unsigned char *byte);
size_t ringbuf_size(const struct ringbuf *rb);

#endif

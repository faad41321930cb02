#include "ringbuf.h"

void ringbuf_init(struct ringbuf *rb, unsigned char *storage, size_t capacity) {
  rb->storage = storage;
  rb->capacity = capacity;
  rb->head = 0;
  rb->size = 0;
}

bool ringbuf_push(struct ringbuf *rb, unsigned char byte) {
  if (rb->size == rb->capacity) return false;
  rb->storage[(rb->head + rb->size) % rb->capacity] = byte;
  rb->size++;
  return true;
}

bool ringbuf_pop(struct ringbuf *rb, unsigned char *byte) {
  if (rb->size == 0) return false;
  *byte = rb->storage[rb->head];
  rb->head = (rb->head + 1) % rb->capacity;
  rb->size--;
  return true;
}

size_t ringbuf_size(const struct ringbuf *rb) { return rb->size; }

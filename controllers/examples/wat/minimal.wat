;; minimal.wat: the smallest complete Driftwood controller (ABI version 3,
;; see controllers/ABI.md), written by hand. It constrains nothing; it
;; stops every reply after 8 tokens.
;;
;; Build:  wat2wasm minimal.wat -o minimal.wasm   (or load the .wat as is
;; where the host accepts text modules)
;;
;; Memory map (one 64 KiB page to start with):
;;   0    .. 15     unused, so that no pointer is 0 (0 means failure)
;;   16   .. 39     the result record returned by dw_step
;;   1024 ..        the heap: dw_alloc hands out memory from here, in
;;                  8-byte steps, and never takes it back (the host keeps
;;                  and reuses its buffers)
(module
  ;; The linear memory the host reads the record from and writes the
  ;; argument, vocabulary and tokens into.
  (memory (export "memory") 1)

  ;; The next free byte of the heap.
  (global $heap (mut i32) (i32.const 1024))

  ;; Tokens in the reply so far.
  (global $count (mut i32) (i32.const 0))

  ;; The reply length at which to stop.
  (global $limit i32 (i32.const 8))

  ;; The result record: flags = STOP (bit 1); the other fields (mask_ptr,
  ;; backtrack, force_ptr, force_len, temperature) are 0 and unused.
  (data (i32.const 16)
    "\02\00\00\00" "\00\00\00\00" "\00\00\00\00"
    "\00\00\00\00" "\00\00\00\00" "\00\00\00\00")

  ;; The ABI version this module speaks.
  (func (export "dw_abi_version") (result i32)
    (i32.const 3))

  ;; dw_alloc(size) -> ptr: a bump allocator that grows the memory when
  ;; needed; 0 when it cannot.
  (func (export "dw_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local $end i32)
    (local.set $ptr (global.get $heap))
    ;; end = ptr + size rounded up to 8
    (local.set $end
      (i32.and
        (i32.add (i32.add (local.get $ptr) (local.get $size)) (i32.const 7))
        (i32.const -8)))
    ;; a negative size, or an end past 4 GiB, wraps around: refuse
    (if (i32.lt_u (local.get $end) (local.get $ptr))
      (then (return (i32.const 0))))
    ;; grow by the pages missing (memory.grow answers -1 on failure)
    (if (i32.gt_u (local.get $end) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.eq
              (memory.grow
                (i32.sub
                  (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16))
                  (memory.size)))
              (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $heap (local.get $end))
    (local.get $ptr))

  ;; dw_load(vocab_ptr, vocab_len, n_vocab) -> 0: this controller does
  ;; not need the vocabulary.
  (func (export "dw_load") (param i32 i32 i32) (result i32)
    (i32.const 0))

  ;; dw_init(arg_ptr, arg_len) -> 0: nor its argument.
  (func (export "dw_init") (param i32 i32) (result i32)
    (i32.const 0))

  ;; dw_begin(tokens_ptr, n_tokens) -> 0: a reply starts.
  (func (export "dw_begin") (param i32 i32) (result i32)
    (global.set $count (i32.const 0))
    (i32.const 0))

  ;; dw_step(tokens_ptr, n_tokens) -> record or 0: count the appended
  ;; tokens; once there are $limit, return the STOP record, else 0 (no
  ;; constraint: the host samples freely).
  (func (export "dw_step") (param $ptr i32) (param $n i32) (result i32)
    (global.set $count (i32.add (global.get $count) (local.get $n)))
    (if (result i32) (i32.ge_u (global.get $count) (global.get $limit))
      (then (i32.const 16))
      (else (i32.const 0))))
)

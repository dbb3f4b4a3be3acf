;; steps counts its steps in the key-value store (one byte appended to
;; "steps" per step) and allows every token: a probe for a controller
;; whose state must survive across sessions.
(module
  (import "driftwood" "kv_append" (func $kv_append (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  (data (i32.const 512) "steps")
  (func (export "dw_abi_version") (result i32) (i32.const 2))
  (func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))
  (func (export "dw_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.and (i32.add (i32.add (local.get $p) (local.get $n)) (i32.const 7)) (i32.const -8)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.add (i32.shr_u (global.get $heap) (i32.const 16)) (i32.const 1))))))
    (local.get $p))
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_begin") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32)
    (drop (call $kv_append (i32.const 512) (i32.const 5) (i32.const 512) (i32.const 1)))
    (i32.const 0)))

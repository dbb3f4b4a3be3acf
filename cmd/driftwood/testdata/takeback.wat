;; takeback is a probe for what run prints: it allows only tokens made of
;; lower-case ASCII letters and spaces (so that a terminal lays the reply
;; out plainly), and at every third step of a reply takes back the last
;; two tokens. What run prints must be the reply without them.
(module
  (memory (export "memory") 2)
  (global $heap (mut i32) (i32.const 65536))
  (global $steps (mut i32) (i32.const 0))
  ;; 1024: flags MASK, mask at 8192. 1056: flags MASK|BACKTRACK, take back 2.
  (data (i32.const 1024) "\01\00\00\00\00\20\00\00")
  (data (i32.const 1056) "\11\00\00\00\00\20\00\00\02\00\00\00")
  (func (export "dw_abi_version") (result i32) (i32.const 2))
  (func (export "dw_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.and (i32.add (i32.add (local.get $p) (local.get $n)) (i32.const 7)) (i32.const -8)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.add (i32.shr_u (global.get $heap) (i32.const 16)) (i32.const 1))))))
    (local.get $p))
  ;; dw_load sets the mask's bit of every token whose bytes are all in
  ;; [a-z ] (the vocabulary: flags u8, length u16, bytes, per token).
  (func (export "dw_load") (param $p i32) (param $len i32) (param $n i32) (result i32)
    (local $id i32) (local $l i32) (local $i i32) (local $ok i32) (local $b i32) (local $w i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $id) (local.get $n)))
        (local.set $l (i32.load16_u (i32.add (local.get $p) (i32.const 1))))
        (local.set $ok (i32.and (i32.eqz (i32.load8_u (local.get $p))) (i32.ne (local.get $l) (i32.const 0))))
        (local.set $i (i32.const 0))
        (block $end
          (loop $byte
            (br_if $end (i32.ge_u (local.get $i) (local.get $l)))
            (local.set $b (i32.load8_u (i32.add (i32.add (local.get $p) (i32.const 3)) (local.get $i))))
            (if (i32.eqz (i32.or (i32.eq (local.get $b) (i32.const 32))
                                 (i32.and (i32.ge_u (local.get $b) (i32.const 97)) (i32.le_u (local.get $b) (i32.const 122)))))
              (then (local.set $ok (i32.const 0))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $byte)))
        (if (local.get $ok)
          (then
            (local.set $w (i32.add (i32.const 8192) (i32.shl (i32.shr_u (local.get $id) (i32.const 5)) (i32.const 2))))
            (i32.store (local.get $w) (i32.or (i32.load (local.get $w)) (i32.shl (i32.const 1) (local.get $id))))))
        (local.set $p (i32.add (i32.add (local.get $p) (i32.const 3)) (local.get $l)))
        (local.set $id (i32.add (local.get $id) (i32.const 1)))
        (br $next)))
    (i32.const 0))
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_begin") (param i32 i32) (result i32)
    (global.set $steps (i32.const 0))
    (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
    (if (result i32) (i32.eqz (i32.rem_u (global.get $steps) (i32.const 3)))
      (then (i32.const 1056))
      (else (i32.const 1024)))))

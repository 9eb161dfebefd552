"""DCE: unused pure ops and effect-free region ops go; stores, volatile loads and terminators stay."""

from tritone.passes import dce


def test_dce_removes_dead_for_and_keeps_effects(golden):
    golden(dce, """
        module @k {
          tt.func @k(%p: *fp32, %n: i32, %b: i1) {kernel = true} {
            %c0 = constant() {value = 0} : () -> i32
            %c1 = constant() {value = 1} : () -> i32
            %init = constant() {value = 0.0} : () -> fp32
            %dead = for(%c0, %n, %c1, %init) ({
            ^(%i: i32, %acc: fp32):
              %ld = load(%p) : (*fp32) -> fp32
              %sum = add(%acc, %ld) : (fp32, fp32) -> fp32
              yield(%sum) : (fp32) -> ()
            }) : (i32, i32, i32, fp32) -> fp32
            for(%c0, %n, %c1) ({
            ^(%j: i32):
              %unused = mul(%j, %j) : (i32, i32) -> i32
              %v = load(%p) : (*fp32) -> fp32
              %deadif = if(%b) ({
                %x = add(%v, %v) : (fp32, fp32) -> fp32
                yield(%x) : (fp32) -> ()
              }, {
                yield(%v) : (fp32) -> ()
              }) : (i1) -> fp32
              store(%p, %v) : (*fp32, fp32) -> ()
              yield() : () -> ()
            }) : (i32, i32, i32) -> ()
            %u = add(%n, %n) : (i32, i32) -> i32
            %u2 = mul(%u, %u) : (i32, i32) -> i32
            %vl = load(%p) {volatile = true} : (*fp32) -> fp32
            %kept = if(%b) ({
              print(%n) {prefix = "n"} : (i32) -> ()
              yield(%n) : (i32) -> ()
            }, {
              yield(%n) : (i32) -> ()
            }) : (i1) -> i32
            return() : () -> ()
          }
        }
        """, """
        module @k {
          tt.func @k(%p: *fp32, %n: i32, %b: i1) {kernel = true} {
            %c0 = constant() {value = 0} : () -> i32
            %c1 = constant() {value = 1} : () -> i32
            for(%c0, %n, %c1) ({
            ^(%j: i32):
              %v = load(%p) : (*fp32) -> fp32
              store(%p, %v) : (*fp32, fp32) -> ()
              yield() : () -> ()
            }) : (i32, i32, i32) -> ()
            %vl = load(%p) {volatile = true} : (*fp32) -> fp32
            %kept = if(%b) ({
              print(%n) {prefix = "n"} : (i32) -> ()
              yield(%n) : (i32) -> ()
            }, {
              yield(%n) : (i32) -> ()
            }) : (i1) -> i32
            return() : () -> ()
          }
        }
        """)

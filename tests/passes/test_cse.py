"""CSE: identical pure ops merged within a region and from enclosing regions into nested ones."""

from tritone.passes import cse


def test_cse_across_nested_regions(golden):
    # Loads are not merged; ops of sibling regions (then / else) do not see each other;
    # 0.0 and -0.0 are different constants.
    golden(cse, """
        module @k {
          tt.func @k(%p: *i32, %pf: *fp32, %n: i32, %b: i1) {kernel = true} {
            %a = add(%n, %n) : (i32, i32) -> i32
            %a2 = add(%n, %n) : (i32, i32) -> i32
            %m = mul(%a, %a2) : (i32, i32) -> i32
            %l1 = load(%p) : (*i32) -> i32
            %l2 = load(%p) : (*i32) -> i32
            %s = for(%n, %l1, %l2, %m) ({
            ^(%i: i32, %acc: i32):
              %r = if(%b) ({
                %a3 = add(%n, %n) : (i32, i32) -> i32
                %q = mul(%a3, %a3) : (i32, i32) -> i32
                %w = xor(%i, %q) : (i32, i32) -> i32
                yield(%w) : (i32) -> ()
              }, {
                %e1 = sub(%n, %i) : (i32, i32) -> i32
                yield(%e1) : (i32) -> ()
              }) : (i1) -> i32
              %w2 = xor(%i, %m) : (i32, i32) -> i32
              %e2 = sub(%n, %i) : (i32, i32) -> i32
              %t = add(%w2, %e2) : (i32, i32) -> i32
              %u = add(%t, %r) : (i32, i32) -> i32
              yield(%u) : (i32) -> ()
            }) : (i32, i32, i32, i32) -> i32
            store(%p, %s) : (*i32, i32) -> ()
            %z1 = constant() {value = 0.0} : () -> fp32
            %z2 = constant() {value = -0.0} : () -> fp32
            %z3 = constant() {value = 0.0} : () -> fp32
            store(%pf, %z1) : (*fp32, fp32) -> ()
            store(%pf, %z2) : (*fp32, fp32) -> ()
            store(%pf, %z3) : (*fp32, fp32) -> ()
            return() : () -> ()
          }
        }
        """, """
        module @k {
          tt.func @k(%p: *i32, %pf: *fp32, %n: i32, %b: i1) {kernel = true} {
            %a = add(%n, %n) : (i32, i32) -> i32
            %m = mul(%a, %a) : (i32, i32) -> i32
            %l1 = load(%p) : (*i32) -> i32
            %l2 = load(%p) : (*i32) -> i32
            %s = for(%n, %l1, %l2, %m) ({
            ^(%i: i32, %acc: i32):
              %r = if(%b) ({
                %w = xor(%i, %m) : (i32, i32) -> i32
                yield(%w) : (i32) -> ()
              }, {
                %e1 = sub(%n, %i) : (i32, i32) -> i32
                yield(%e1) : (i32) -> ()
              }) : (i1) -> i32
              %w2 = xor(%i, %m) : (i32, i32) -> i32
              %e2 = sub(%n, %i) : (i32, i32) -> i32
              %t = add(%w2, %e2) : (i32, i32) -> i32
              %u = add(%t, %r) : (i32, i32) -> i32
              yield(%u) : (i32) -> ()
            }) : (i32, i32, i32, i32) -> i32
            store(%p, %s) : (*i32, i32) -> ()
            %z1 = constant() {value = 0.0} : () -> fp32
            %z2 = constant() {value = -0.0} : () -> fp32
            store(%pf, %z1) : (*fp32, fp32) -> ()
            store(%pf, %z2) : (*fp32, fp32) -> ()
            store(%pf, %z1) : (*fp32, fp32) -> ()
            return() : () -> ()
          }
        }
        """)


def test_cse_keeps_combine_regions_isolated(golden):
    # A reduce or scan combine becomes a device function of its own in the CUDA
    # backend: its constants must not be replaced by equal ones from outside, while
    # duplicates inside the region still merge.
    golden(cse, """
        module @k {
          tt.func @k(%p: *i32, %x: <32xi32>) {kernel = true} {
            %one = constant() {value = 1} : () -> i32
            %s = scan(%x) ({
            ^(%a: i32, %b: i32):
              %c1 = constant() {value = 1} : () -> i32
              %c2 = constant() {value = 1} : () -> i32
              %t = add(%a, %c1) : (i32, i32) -> i32
              %u = add(%t, %c2) : (i32, i32) -> i32
              %v = add(%u, %b) : (i32, i32) -> i32
              yield(%v) : (i32) -> ()
            }) {axis = 0, reverse = false} : (<32xi32>) -> <32xi32>
            %r = reduce(%x) ({
            ^(%ra: i32, %rb: i32):
              %c3 = constant() {value = 1} : () -> i32
              %w = add(%ra, %rb) : (i32, i32) -> i32
              %y = add(%w, %c3) : (i32, i32) -> i32
              yield(%y) : (i32) -> ()
            }) {axis = 0} : (<32xi32>) -> i32
            %q = add(%r, %one) : (i32, i32) -> i32
            store(%p, %q) : (*i32, i32) -> ()
            return() : () -> ()
          }
        }
        """, """
        module @k {
          tt.func @k(%p: *i32, %x: <32xi32>) {kernel = true} {
            %one = constant() {value = 1} : () -> i32
            %s = scan(%x) ({
            ^(%a: i32, %b: i32):
              %c1 = constant() {value = 1} : () -> i32
              %t = add(%a, %c1) : (i32, i32) -> i32
              %u = add(%t, %c1) : (i32, i32) -> i32
              %v = add(%u, %b) : (i32, i32) -> i32
              yield(%v) : (i32) -> ()
            }) {axis = 0, reverse = false} : (<32xi32>) -> <32xi32>
            %r = reduce(%x) ({
            ^(%ra: i32, %rb: i32):
              %c3 = constant() {value = 1} : () -> i32
              %w = add(%ra, %rb) : (i32, i32) -> i32
              %y = add(%w, %c3) : (i32, i32) -> i32
              yield(%y) : (i32) -> ()
            }) {axis = 0} : (<32xi32>) -> i32
            %q = add(%r, %one) : (i32, i32) -> i32
            store(%p, %q) : (*i32, i32) -> ()
            return() : () -> ()
          }
        }
        """)

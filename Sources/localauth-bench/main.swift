// localauth-bench: measures localauthd beside fprintd (see BENCHMARKS.md).
print("localauth-bench: not written yet")

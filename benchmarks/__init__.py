"""Benchmarks of vsf_sensor_ros: library call cost, node end to end over DDS, scaling.

Entry point: ``python -m benchmarks.run [--quick] [--out benchmarks/results.json]``
(``make bench``).  Modules:

* :mod:`benchmarks.bench_library` -- per-call timing of the sensor models and
  a straightforward dense reference implementation to compare against;
* :mod:`benchmarks.bench_node` -- ``sensor_node`` as a child process, fed by
  :mod:`benchmarks.bench_publisher` at fixed rates over real DDS (loopback);
* :mod:`benchmarks.bench_scaling` -- library latency vs contact count and
  mesh size, with a PNG plot.
"""

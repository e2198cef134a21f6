# prometheus/: the exposition's protobuf classes, generated from the vendored schema
# (prometheus/metrics.proto) by the protoc of grpcio-tools, pinned in pyproject.toml
# beside the protobuf runtime it matches. Not checked in: the .proto is the source.

prometheus/metrics_pb2.py: prometheus/metrics.proto $(VENV)/.installed
	$(PY) -m grpc_tools.protoc -Iprometheus --python_out=prometheus $<

ALL_TARGETS += prometheus/metrics_pb2.py

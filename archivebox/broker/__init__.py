"""The two Huey queues of the project (:mod:`~archivebox.broker.huey_ext`) and the consumer
adapted to them; the queue files' checks (:mod:`~archivebox.broker.repair`) and the
doorbell. Nothing is imported here: ``archivebox status`` checks the queue files without
importing Huey's consumer and the Redis client."""

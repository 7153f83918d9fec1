from inference_ledger.cli import run

run()

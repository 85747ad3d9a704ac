"""What the dashboard's server starts and checks: a page's live run in a worker process (jobs, the queue; worker;
zygote, the warm parent every worker is forked from) and rows uploaded from another machine (uploads).
"""

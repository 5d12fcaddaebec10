"""``agentpack view``: a local web viewer of the run store (starlette and uvicorn load only when it starts).

``agentpack.results.viewer.html`` holds the helpers plugins use to render their run views.
"""

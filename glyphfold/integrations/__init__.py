"""Framework adapters: glyphfold in each framework's own idiom, one line for the user.

- :mod:`glyphfold.integrations.langchain`: ``GlyphfoldMiddleware`` (LangChain v1
  ``create_agent``) and ``glyphfold_pre_model_hook`` (a LangGraph node);
- :mod:`glyphfold.integrations.openai_agents`: ``GlyphfoldInputFilter`` (a
  ``RunConfig.call_model_input_filter``) and ``glyphfold_handoff_filter``;
- :mod:`glyphfold.integrations.pydantic_ai`: ``GlyphfoldHistory`` (a history processor,
  or a ``ProcessHistory`` capability via ``.capability()``).

Each module needs its framework (``pip install glyphfold[langchain]``,
``glyphfold[openai-agents]``, ``glyphfold[pydantic-ai]``) and is imported only when
used; this package imports none of them.
"""
